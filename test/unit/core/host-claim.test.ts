import {
  claimedHostsOf,
  consumerRefFor,
  hostInUseMessage,
  judgeHostClaim,
  judgePodClaim,
  podConsumerValue,
} from '../../../shared/core/host-claim.js';
import { indexHostsByMac } from '../../../shared/core/host-index.js';
import { indexVirtletVmsByMac } from '../../../shared/core/pod-index.js';

/** One owner per host (contract section 12): what a host's consumerRef means for a Provisioning. */
describe('host claims', () => {
  const owner = { namespace: 'alpha', name: 'edge', uid: 'u-1' };
  const mine = consumerRefFor(owner);

  it('writes the consumerRef Metal3 keeps: apiVersion, kind, namespace, name, uid', () => {
    expect(mine).toEqual({
      apiVersion: 'bpa.akraino.org/v1alpha1',
      kind: 'Provisioning',
      namespace: 'alpha',
      name: 'edge',
      uid: 'u-1',
    });
  });

  it('is free without a consumerRef, or with an empty one', () => {
    expect(judgeHostClaim(undefined, owner)).toEqual({ kind: 'free' });
    expect(judgeHostClaim(null, owner)).toEqual({ kind: 'free' });
    expect(judgeHostClaim({}, owner)).toEqual({ kind: 'free' });
    expect(judgeHostClaim({ name: '' }, owner)).toEqual({ kind: 'free' });
  });

  it('is mine when it names this Provisioning (with its uid, or without a uid)', () => {
    expect(judgeHostClaim(mine, owner)).toEqual({ kind: 'mine' });
    expect(judgeHostClaim({ ...mine, uid: undefined }, owner)).toEqual({ kind: 'mine' });
  });

  it('is taken by another Provisioning, by an earlier one of the same name, or by a Metal3Machine', () => {
    expect(judgeHostClaim({ ...mine, namespace: 'beta' }, owner)).toEqual({
      kind: 'taken',
      holder: { namespace: 'beta', name: 'edge', provisioning: { uid: 'u-1' } },
    });
    expect(judgeHostClaim({ ...mine, uid: 'u-0' }, owner)).toEqual({
      kind: 'taken',
      holder: { namespace: 'alpha', name: 'edge', provisioning: { uid: 'u-0' } },
    });
    // Not a Provisioning: in use, and never taken over (its holder is not ours to judge).
    const machine = {
      apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta1',
      kind: 'Metal3Machine',
      namespace: 'alpha',
      name: 'edge',
    };
    expect(judgeHostClaim(machine, owner)).toEqual({
      kind: 'taken',
      holder: { namespace: 'alpha', name: 'edge' },
    });
    expect(judgeHostClaim({ ...mine, apiVersion: 'example.com/v1' }, owner).kind).toBe('taken');
  });

  it('says who holds a host in the contract’s words', () => {
    expect(
      hostInUseMessage('Host', 'metal3/h1', 'aa:bb:cc:00:00:01', { namespace: 'beta', name: 'other' }),
    ).toBe('Host metal3/h1 (MAC aa:bb:cc:00:00:01) is already used by beta/other');
  });

  it('judges a VM pod by its bpa.akraino.org/consumer annotation', () => {
    expect(podConsumerValue(owner)).toBe('alpha/edge/u-1');
    expect(judgePodClaim(undefined, owner)).toEqual({ kind: 'free' });
    expect(judgePodClaim('alpha/edge/u-1', owner)).toEqual({ kind: 'mine' });
    expect(judgePodClaim('beta/edge/u-9', owner)).toEqual({
      kind: 'taken',
      holder: { namespace: 'beta', name: 'edge', provisioning: { uid: 'u-9' } },
    });
    expect(judgePodClaim('alpha/edge/u-0', owner).kind).toBe('taken');
    expect(judgePodClaim('someone', owner)).toEqual({
      kind: 'taken',
      holder: { namespace: '', name: 'someone' },
    });
  });

  it('reads status.claimedHosts, dropping what is malformed', () => {
    expect(
      claimedHostsOf({
        claimedHosts: [
          { kind: 'BareMetalHost', namespace: 'metal3', name: 'h1' },
          { kind: 'Pod', namespace: 'vms', name: 'vm-1' },
          { kind: 'Secret', namespace: 'x', name: 'y' },
          'h2',
        ],
      }),
    ).toEqual([
      { kind: 'BareMetalHost', namespace: 'metal3', name: 'h1' },
      { kind: 'Pod', namespace: 'vms', name: 'vm-1' },
    ]);
    expect(claimedHostsOf(undefined)).toEqual([]);
    expect(claimedHostsOf({ claimedHosts: 'h1' })).toEqual([]);
  });

  it('keeps the consumer and resourceVersion in the MAC index and the VM index', () => {
    const index = indexHostsByMac([
      {
        metadata: { name: 'h1', namespace: 'metal3', resourceVersion: '7' },
        spec: { bootMACAddress: 'AA:BB:CC:00:00:01', consumerRef: mine },
      },
      { metadata: { name: 'h2', namespace: 'metal3' }, spec: { bootMACAddress: 'aa:bb:cc:00:00:02' } },
    ]);
    expect(index.get('aa:bb:cc:00:00:01')).toEqual({
      host: 'metal3/h1',
      consumer: mine,
      resourceVersion: '7',
    });
    expect(index.get('aa:bb:cc:00:00:02')).toEqual({ host: 'metal3/h2' });
    const vms = indexVirtletVmsByMac([
      {
        metadata: {
          name: 'vm-1',
          namespace: 'vms',
          resourceVersion: '9',
          annotations: {
            'kubernetes.io/target-runtime': 'virtlet.cloud',
            'bpa.akraino.org/consumer': 'alpha/edge/u-1',
            'k8s.v1.cni.cncf.io/network-status': JSON.stringify([
              { mac: 'aa:bb:cc:00:00:09', ips: ['10.0.0.9'] },
            ]),
          },
        },
        status: { phase: 'Running' },
      },
    ]);
    expect(vms.get('aa:bb:cc:00:00:09')).toEqual({
      pod: 'vms/vm-1',
      ip: '10.0.0.9',
      consumer: 'alpha/edge/u-1',
      resourceVersion: '9',
    });
  });
});
