import { kudInstallerScript } from '../../../shared/core/kud-job.js';
import { launchHash, launchSettingsHash } from '../../../shared/core/launch-hash.js';
import { decideNodeChange, describeNodeChange } from '../../../shared/core/node-change.js';
import { Reason } from '../../../shared/reasons.js';
import type { ResolvedNode } from '../../../shared/schemas/node.js';

let octet = 10;
const node = (label: string, ...roles: ResolvedNode['roles']): ResolvedNode => {
  octet += 1;
  return { label, roles, mac: `52:54:00:00:00:${octet}`, ip: `10.0.0.${octet}`, source: 'dhcp-leases' };
};
const m1 = node('m1', 'master');
const m2 = node('m2', 'master');
const m3 = node('m3', 'master');
const w1 = node('w1', 'worker');
const w2 = node('w2', 'worker');
const w3 = node('w3', 'worker');

describe('decideNodeChange (contract section 14)', () => {
  it('nothing installed with these settings: the full install', () => {
    expect(decideNodeChange('c', undefined, [m1, w1])).toMatchObject({ kind: 'install' });
  });

  it('the same nodes: unchanged', () => {
    expect(decideNodeChange('c', [m1, w1], [m1, w1])).toEqual({ kind: 'unchanged' });
  });

  it('a worker added: scale with the new worker(s) only', () => {
    expect(decideNodeChange('c', [m1, w1], [m1, w1, w2, w3])).toEqual({ kind: 'scale', added: ['w2', 'w3'] });
    expect(describeNodeChange({ kind: 'scale', added: ['w2'] })).toBe(
      'adding worker(s) w2 with Kubespray scale.yml',
    );
  });

  it('a worker removed: remove-node with that worker', () => {
    expect(decideNodeChange('c', [m1, w1, w2], [m1, w2])).toEqual({ kind: 'remove-node', removed: ['w1'] });
  });

  it('a master added: the full install (Kubespray joins a master only with cluster.yml)', () => {
    const change = decideNodeChange('c', [m1, w1], [m1, m2, w1]);
    expect(change).toMatchObject({ kind: 'install' });
    expect(change.kind === 'install' && change.why).toContain('master(s) m2 added');
  });

  it('a node whose address or role changed: the full install', () => {
    expect(decideNodeChange('c', [m1, w1], [m1, { ...w1, ip: '10.9.9.9' }])).toMatchObject({
      kind: 'install',
    });
    expect(decideNodeChange('c', [m1, w1], [m1, { ...w1, roles: ['master', 'worker'] }])).toMatchObject({
      kind: 'install',
    });
  });

  it('removing a master keeps a quorum: 3 -> 2 goes; 2 -> 1 and 1 -> 0 are refused', () => {
    expect(decideNodeChange('c', [m1, m2, m3, w1], [m1, m2, w1])).toEqual({
      kind: 'remove-node',
      removed: ['m3'],
    });
    const twoToOne = decideNodeChange('c', [m1, m2, w1], [m1, w1]);
    expect(twoToOne).toMatchObject({ kind: 'refused', reason: 'MasterRemovalRefused' });
    expect(twoToOne.kind === 'refused' && twoToOne.message).toBe(
      'Removing master(s) m2 from cluster c is refused: 1 of 2 masters would remain, and etcd keeps its quorum only while more than half of the former 2 stay; remove fewer masters at a time',
    );
    // 3 -> 1 at once: refused too (1 is not more than half of 3).
    expect(decideNodeChange('c', [m1, m2, m3, w1], [m1, w1])).toMatchObject({
      kind: 'refused',
      reason: 'MasterRemovalRefused',
    });
    // 1 -> 0 (the only master is the first one as well).
    expect(decideNodeChange('c', [m1, w1, w2], [w1, w2])).toMatchObject({
      kind: 'refused',
      reason: 'MasterRemovalRefused',
    });
    expect(Reason.MasterRemovalRefused).toBe('MasterRemovalRefused');
  });

  it('the first master is never removed (Kubespray cannot), whatever the quorum', () => {
    const change = decideNodeChange('c', [m1, m2, m3, w1], [m2, m3, w1]);
    expect(change).toMatchObject({ kind: 'refused', reason: 'MasterRemovalRefused' });
    expect(change.kind === 'refused' && change.message).toContain('it is the first master (kube-master[0])');
  });

  it('a master that is also a worker counts as a master', () => {
    const mw = node('mw', 'master', 'worker');
    expect(decideNodeChange('c', [m1, mw, w1], [m1, w1])).toMatchObject({
      kind: 'refused',
      reason: 'MasterRemovalRefused',
    });
  });

  it('added and removed in one change: refused (MixedNodeChange)', () => {
    const change = decideNodeChange('c', [m1, w1], [m1, w2]);
    expect(change).toMatchObject({ kind: 'refused', reason: 'MixedNodeChange' });
    expect(change.kind === 'refused' && change.message).toContain('w2 added and w1 removed in one change');
    expect(Reason.MixedNodeChange).toBe('MixedNodeChange');
  });
});

describe('the day-2 Job line and launch hash', () => {
  it('names the path and the nodes before --plugins', () => {
    expect(kudInstallerScript('c1', '10.0.0.0/8', ['a'], { kind: 'scale', nodes: ['w2', 'w3'] })).toMatch(
      /\.\/installer --cluster c1 --network 10\.0\.0\.0\/8 --scale w2,w3 --plugins a$/,
    );
    expect(kudInstallerScript('c1', null, null, { kind: 'remove-node', nodes: ['w1'] })).toMatch(
      /\.\/installer --cluster c1 --remove-node w1$/,
    );
  });

  const inputs = {
    inventorySha256: 'a'.repeat(64),
    image: 'kud:1',
    cluster: 'c1',
    sshKeySecret: 'ssh-key-secret',
    namespace: 'bpa-system',
  };
  it('a path changes the launch hash; no path keeps the full install’s hash', () => {
    const full = launchHash(inputs);
    expect(launchHash({ ...inputs, path: null })).toBe(full);
    const scale = launchHash({ ...inputs, path: { kind: 'scale', nodes: ['w2'] } });
    expect(scale).not.toBe(full);
    expect(launchHash({ ...inputs, path: { kind: 'remove-node', nodes: ['w2'] } })).not.toBe(scale);
  });

  it('the settings hash ignores the inventory, not the rest', () => {
    const { inventorySha256: _ignored, ...settings } = inputs;
    expect(launchSettingsHash(settings, 'baremetal')).toBe(launchSettingsHash({ ...settings }, 'baremetal'));
    expect(launchSettingsHash(settings, 'baremetal')).not.toBe(launchSettingsHash(settings, 'virtlet-vm'));
    expect(launchSettingsHash(settings, 'baremetal')).not.toBe(
      launchSettingsHash({ ...settings, kudPlugins: ['x'] }, 'baremetal'),
    );
  });
});
