import type { V1Job } from '@kubernetes/client-node';
import {
  baseNodesAnnotation,
  clusterNodesAnnotation,
  installedNodes,
  planNodePath,
  settingsHashAnnotation,
  type NodeSet,
} from '../../../functions/kud-job-launch/node-path.js';
import type { ResolvedNode } from '../../../shared/schemas/node.js';

const node = (label: string, role: 'master' | 'worker', i: number): ResolvedNode => ({
  label,
  roles: [role],
  mac: `52:54:00:00:00:0${i}`,
  ip: `10.0.0.${i}`,
  source: 'dhcp-leases',
});
const m1 = node('m1', 'master', 1);
const w1 = node('w1', 'worker', 2);
const w2 = node('w2', 'worker', 3);
const set = (...nodes: ResolvedNode[]): NodeSet => ({
  nodes,
  workerOrder: nodes.filter((n) => n.roles.includes('worker')).map((n) => n.label),
});

function job(
  state: 'Complete' | 'Failed' | 'running',
  annotations: Record<string, string>,
  uid = 'uid-1',
): V1Job {
  return {
    metadata: {
      name: 'kud-c',
      labels: { 'app.kubernetes.io/managed-by': 'bpa-functions', 'bpa.akraino.org/provisioning-uid': uid },
      annotations: { 'bpa.akraino.org/launch-hash': 'h-old', ...annotations },
    },
    status: state === 'running' ? {} : { conditions: [{ type: state, status: 'True' }] },
  };
}
const recorded = (cluster: NodeSet, base?: NodeSet) => ({
  [settingsHashAnnotation]: 's1',
  [clusterNodesAnnotation]: JSON.stringify(cluster),
  ...(base ? { [baseNodesAnnotation]: JSON.stringify(base) } : {}),
});
const plan = (existing: V1Job | undefined, wanted: NodeSet) =>
  planNodePath({
    cluster: 'c',
    clusterType: 'baremetal',
    existing,
    ownerUid: 'uid-1',
    settingsHash: 's1',
    wanted,
  });

describe('the installed nodes, from the existing Job', () => {
  it('a succeeded Job: the nodes it installed; running or failed: the nodes it started from', () => {
    expect(installedNodes(job('Complete', recorded(set(m1, w1))), 'uid-1', 's1')).toEqual(set(m1, w1));
    expect(installedNodes(job('Failed', recorded(set(m1, w1, w2), set(m1, w1))), 'uid-1', 's1')).toEqual(
      set(m1, w1),
    );
    expect(installedNodes(job('running', recorded(set(m1, w1, w2), set(m1, w1))), 'uid-1', 's1')).toEqual(
      set(m1, w1),
    );
    // A failed full install leaves nothing known.
    expect(installedNodes(job('Failed', recorded(set(m1, w1))), 'uid-1', 's1')).toBeUndefined();
  });

  it('another owner, other settings, a Job from before: nothing known', () => {
    expect(installedNodes(job('Complete', recorded(set(m1, w1)), 'other'), 'uid-1', 's1')).toBeUndefined();
    expect(installedNodes(job('Complete', recorded(set(m1, w1))), 'uid-1', 's2')).toBeUndefined();
    expect(installedNodes(job('Complete', {}), 'uid-1', 's1')).toBeUndefined();
    expect(installedNodes(undefined, 'uid-1', 's1')).toBeUndefined();
  });
});

describe('planNodePath', () => {
  it('grows: mounts the new inventory and runs --scale with the new worker', () => {
    const planned = plan(job('Complete', recorded(set(m1, w1))), set(m1, w1, w2));
    expect('refused' in planned).toBe(false);
    if ('refused' in planned) return;
    expect(planned.path).toEqual({ kind: 'scale', nodes: ['w2'] });
    expect(planned.inventory).toContain('[kube-node]\nw1\nw2\n');
    expect(JSON.parse(planned.annotations[baseNodesAnnotation]!)).toEqual(set(m1, w1));
    expect(JSON.parse(planned.annotations[clusterNodesAnnotation]!)).toEqual(set(m1, w1, w2));
  });

  it('shrinks: mounts the inventory that still has the leaving node, runs --remove-node', () => {
    const planned = plan(job('Complete', recorded(set(m1, w1, w2))), set(m1, w1));
    if ('refused' in planned) throw new Error('refused');
    expect(planned.path).toEqual({ kind: 'remove-node', nodes: ['w2'] });
    expect(planned.inventory).toContain('w2  ansible_ssh_host=10.0.0.3');
  });

  it('unchanged after a success: the existing Job is the launch (its hash)', () => {
    const planned = plan(job('Complete', recorded(set(m1, w1))), set(m1, w1));
    if ('refused' in planned) throw new Error('refused');
    expect(planned.sameLaunchHash).toBe('h-old');
    expect(planned.path).toBeUndefined();
  });

  it('refused: nothing to mount', () => {
    const m2 = node('m2', 'master', 4);
    const planned = plan(job('Complete', recorded(set(m1, m2, w1))), set(m1, w1));
    expect(planned).toMatchObject({ refused: { reason: 'MasterRemovalRefused' } });
  });

  it('no Job yet: the full install', () => {
    const planned = plan(undefined, set(m1, w1));
    if ('refused' in planned) throw new Error('refused');
    expect(planned.change.kind).toBe('install');
    expect(planned.path).toBeUndefined();
  });
});
