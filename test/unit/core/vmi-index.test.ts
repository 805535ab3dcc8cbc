import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BpaError } from '../../../shared/errors.js';
import { parseObjects, validateObjects } from '../../../shared/core/documents.js';
import { resolveCluster } from '../../../shared/core/resolve.js';
import { indexKubevirtVmsByMac } from '../../../shared/core/vmi-index.js';
import { provisioningSchema } from '../../../shared/schemas/provisioning.js';
import { vmiSchema, type VirtualMachineInstance } from '../../../shared/schemas/vmi.js';
import { fixturesRoot } from './golden.js';

/** The kubevirt-vm path (contract section 14): VMIs parsed with zod, indexed by interface MAC. */

const vmi = (
  name: string,
  interfaces: object[] | undefined,
  extra: { phase?: string; annotations?: Record<string, string>; resourceVersion?: string } = {},
): VirtualMachineInstance =>
  vmiSchema.parse({
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: {
      name,
      namespace: 'vms',
      ...(extra.annotations && { annotations: extra.annotations }),
      ...(extra.resourceVersion && { resourceVersion: extra.resourceVersion }),
    },
    spec: { domain: { devices: {} } },
    status: { phase: extra.phase ?? 'Running', ...(interfaces && { interfaces }) },
  });

function errorOf(fn: () => unknown): BpaError {
  try {
    fn();
  } catch (error) {
    if (error instanceof BpaError) return error;
    throw error;
  }
  throw new Error('expected a BpaError');
}

describe('vmiSchema', () => {
  it('keeps what the path reads and drops the rest of a VMI', () => {
    const [parsed] = validateObjects(
      parseObjects(readFileSync(join(fixturesRoot, 'render', 'vmis', 'vmis.yaml'), 'utf8')),
      vmiSchema,
    );
    expect(parsed).toEqual({
      kind: 'VirtualMachineInstance',
      metadata: { name: 'kv-master', namespace: 'vms' },
      status: {
        phase: 'Running',
        interfaces: [
          expect.objectContaining({ mac: '52:54:00:6b:00:01', ipAddress: '10.244.2.11' }),
          expect.objectContaining({ mac: '52:54:00:6b:00:91', ipAddress: '192.168.60.11' }),
        ],
      },
    });
  });

  it('refuses another kind and an interface whose fields have the wrong types', () => {
    expect(vmiSchema.safeParse({ kind: 'Pod', metadata: { name: 'x' } }).success).toBe(false);
    expect(
      vmiSchema.safeParse({ metadata: { name: 'x' }, status: { interfaces: [{ mac: 5 }] } }).success,
    ).toBe(false);
    expect(() =>
      validateObjects([{ kind: 'VirtualMachineInstance', metadata: { name: '' } }], vmiSchema),
    ).toThrow(/metadata\.name/);
  });
});

describe('indexKubevirtVmsByMac', () => {
  it('indexes every interface of a Running VMI by its normalised MAC, with that interface’s IP', () => {
    const index = indexKubevirtVmsByMac([
      vmi(
        'a',
        [
          { name: 'default', mac: '52:54:00:00:00:01', ipAddress: '10.0.0.1' },
          { name: 'net1', mac: '52-54-00-00-00-0A', ipAddress: '192.168.1.1' },
        ],
        { annotations: { 'bpa.akraino.org/consumer': 'ns/p/uid' }, resourceVersion: '7' },
      ),
    ]);
    expect(index.get('52:54:00:00:00:01')).toEqual({
      vmi: 'vms/a',
      ip: '10.0.0.1',
      consumer: 'ns/p/uid',
      resourceVersion: '7',
    });
    expect(index.get('52:54:00:00:00:0a')).toMatchObject({ vmi: 'vms/a', ip: '192.168.1.1' });
  });

  it('takes only Running VMIs', () => {
    for (const phase of ['Pending', 'Scheduling', 'Scheduled', 'Succeeded', 'Failed', 'Unknown'])
      expect(
        indexKubevirtVmsByMac([vmi('a', [{ mac: '52:54:00:00:00:01', ipAddress: '10.0.0.1' }], { phase })])
          .size,
      ).toBe(0);
    expect(indexKubevirtVmsByMac([vmiSchema.parse({ metadata: { name: 'no-status' } })]).size).toBe(0);
  });

  it('keeps a VMI without an IP yet (its node is then IpAddressNotFound), and skips bad MACs', () => {
    const index = indexKubevirtVmsByMac([
      vmi('booting', [{ mac: '52:54:00:00:00:01' }, { mac: 'not-a-mac', ipAddress: '10.0.0.9' }, {}]),
      vmi('odd', [{ mac: '52:54:00:00:00:02', ipAddress: 'pending' }]),
    ]);
    expect([...index.keys()]).toEqual(['52:54:00:00:00:01', '52:54:00:00:00:02']);
    expect(index.get('52:54:00:00:00:01')).toEqual({ vmi: 'vms/booting' });
    expect(index.get('52:54:00:00:00:02')).toEqual({ vmi: 'vms/odd' });
  });

  it('prefers a VMI with an IP over one with the same MAC still waiting for it', () => {
    const mac = '52:54:00:00:00:01';
    for (const order of [
      ['old', 'new'],
      ['new', 'old'],
    ]) {
      const vmis = order.map((name) =>
        name === 'new' ? vmi('new', [{ mac, ipAddress: '10.0.0.2' }]) : vmi('old', [{ mac }]),
      );
      expect(indexKubevirtVmsByMac(vmis).get(mac)).toEqual({ vmi: 'vms/new', ip: '10.0.0.2' });
    }
  });
});

describe('resolveCluster (KubeVirt)', () => {
  const p = provisioningSchema.parse({
    apiVersion: 'bpa.akraino.org/v1alpha1',
    kind: 'Provisioning',
    metadata: { name: 'p', labels: { cluster: 'c1', 'cluster-type': 'kubevirt-vm' } },
    spec: {
      masters: [{ m1: { 'mac-address': '52:54:00:00:00:01' } }],
      workers: [{ w1: { 'mac-address': '52:54:00:00:00:02' } }],
    },
  });

  it('resolves each node from its VMI’s interface, source kubevirt-vmi', () => {
    const resolved = resolveCluster(p, {
      vmis: [
        vmi('m', [{ mac: '52:54:00:00:00:01', ipAddress: '10.0.0.1' }]),
        vmi('w', [{ mac: '52:54:00:00:00:02', ipAddress: 'fd00::2' }]),
      ],
    });
    expect(resolved.clusterType).toBe('kubevirt-vm');
    expect(resolved.nodes).toEqual([
      { label: 'm1', roles: ['master'], mac: '52:54:00:00:00:01', ip: '10.0.0.1', source: 'kubevirt-vmi' },
      { label: 'w1', roles: ['worker'], mac: '52:54:00:00:00:02', ip: 'fd00::2', source: 'kubevirt-vmi' },
    ]);
  });

  it('a Running VMI without an IP is IpAddressNotFound; none Running is VmNotFound; one message', () => {
    const master = vmi('m', [{ mac: '52:54:00:00:00:01', ipAddress: '10.0.0.1' }]);
    const noIp = errorOf(() =>
      resolveCluster(p, { vmis: [master, vmi('w', [{ mac: '52:54:00:00:00:02' }])] }),
    );
    expect(noIp).toMatchObject({
      reason: 'IpAddressNotFound',
      kind: 'resolution',
      message: 'IP address not found for VM with MAC address 52:54:00:00:00:02',
    });
    const stopped = vmi('w', [{ mac: '52:54:00:00:00:02', ipAddress: '10.0.0.2' }], { phase: 'Succeeded' });
    expect(errorOf(() => resolveCluster(p, { vmis: [master, stopped] }))).toMatchObject({
      reason: 'VmNotFound',
      message: 'IP address not found for VM with MAC address 52:54:00:00:00:02',
    });
  });

  it('reads VMIs only: pods and hosts are not looked at on the KubeVirt path', () => {
    const pod = {
      metadata: {
        name: 'virtlet',
        annotations: {
          'kubernetes.io/target-runtime': 'virtlet.cloud',
          'k8s.v1.cni.cncf.io/network-status': JSON.stringify([
            { mac: '52:54:00:00:00:01', ips: ['10.1.1.1'] },
          ]),
        },
      },
      status: { phase: 'Running', podIP: '10.1.1.1' },
    };
    expect(errorOf(() => resolveCluster(p, { pods: [pod] })).reason).toBe('VmNotFound');
  });
});
