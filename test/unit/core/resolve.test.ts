import { BpaError } from '../../../shared/errors.js';
import { nodeMacsOf, planNodes } from '../../../shared/core/node-plan.js';
import { parseLeases } from '../../../shared/core/leases.js';
import { resolveCluster } from '../../../shared/core/resolve.js';
import type { BareMetalHost } from '../../../shared/schemas/bare-metal-host.js';
import { provisioningSchema, type ProvisioningSpec } from '../../../shared/schemas/provisioning.js';

const mac = (n: number) => `08:00:27:00:00:${n.toString(16).padStart(2, '0')}`;
const host = (n: number, ip?: string, nicMac = mac(n)): BareMetalHost => ({
  metadata: { name: `host-${n}`, namespace: 'metal3' },
  spec: { bootMACAddress: mac(n) },
  status: { hardware: { nics: [{ name: 'eth0', mac: nicMac, ...(ip && { ip }) }] } },
});

function provisioning(spec: object, labels: Record<string, string> = {}) {
  return provisioningSchema.parse({
    apiVersion: 'bpa.akraino.org/v1alpha1',
    kind: 'Provisioning',
    metadata: { name: 'p', labels: { cluster: 'c1', ...labels } },
    spec,
  });
}

function errorOf(fn: () => unknown): BpaError {
  try {
    fn();
  } catch (error) {
    if (error instanceof BpaError) return error;
    throw error;
  }
  throw new Error('expected a BpaError');
}

describe('planNodes', () => {
  const spec = (s: object) => s as ProvisioningSpec;

  it('names no MAC that nodeMacsOf leaves out (the hosts index is built from those)', () => {
    const s = spec({
      masters: [
        { m1: { 'mac-address': ` ${mac(1).toUpperCase()} ` } },
        { m2: { 'mac-address': mac(2).replaceAll(':', '-') } },
      ],
      workers: [{ m1: null }, { w1: { 'mac-address': mac(3) } }, { w2: { 'mac-address': 'not-a-mac' } }],
    });
    expect([...nodeMacsOf(s)]).toEqual([mac(1), mac(2), mac(3)]);
    const valid = spec({ ...s, workers: [{ m1: null }, { w1: { 'mac-address': mac(3) } }] });
    for (const node of planNodes(valid).nodes) expect(nodeMacsOf(valid).has(node.mac)).toBe(true);
  });

  it('makes every master a worker when workers are absent or empty', () => {
    for (const workers of [undefined, null, []]) {
      const plan = planNodes(
        spec({ masters: [{ a: { 'mac-address': mac(1) } }, { b: { 'mac-address': mac(2) } }], workers }),
      );
      expect(plan.nodes.map((n) => [n.label, n.roles])).toEqual([
        ['a', ['master', 'worker']],
        ['b', ['master', 'worker']],
      ]);
      expect(plan.workerOrder).toEqual(['a', 'b']);
    }
  });

  it('keeps the workers list order for [kube-node] and the masters-first order for nodes', () => {
    const plan = planNodes(
      spec({
        masters: [{ m1: { 'mac-address': mac(1) } }, { m2: { 'mac-address': mac(2) } }],
        workers: [
          { w1: { 'mac-address': mac(3) } },
          { m2: null },
          { m1: { 'mac-address': mac(1).toUpperCase() } },
        ],
      }),
    );
    expect(plan.nodes.map((n) => n.label)).toEqual(['m1', 'm2', 'w1']);
    expect(plan.workerOrder).toEqual(['w1', 'm2', 'm1']);
  });

  it.each([
    [{ masters: [] }, 'MastersMissing', /No master nodes/],
    [{ masters: [{ m1: null }] }, 'MacAddressMissing', /^MAC address for masterNode m1 not provided$/],
    [
      { masters: [{ m1: { 'mac-address': '  ' } }] },
      'MacAddressMissing',
      /^MAC address for masterNode m1 not provided$/,
    ],
    [
      { masters: [{ m1: { 'mac-address': mac(1) } }], workers: [{ w1: {} }] },
      'MacAddressMissing',
      /^MAC address for worker w1 not provided$/,
    ],
    [
      { masters: [{ m1: { 'mac-address': mac(1) } }], workers: [{ m1: { 'mac-address': mac(2) } }] },
      'DuplicateNodeLabel',
      /^A node with label m1 already exists, modify resource and assign a different label to node with MACAddress 08:00:27:00:00:02$/,
    ],
    [
      { masters: [{ m1: { 'mac-address': mac(1) } }], workers: [{ w1: { 'mac-address': mac(1) } }] },
      'DuplicateMacAddress',
      /^A node with label w1 already exists, modify resource and assign a different label to node with MACAddress 08:00:27:00:00:01$/,
    ],
    [
      { masters: [{ m1: { 'mac-address': mac(1) } }, { m2: { 'mac-address': mac(1) } }] },
      'DuplicateMacAddress',
      /m1 and m2/,
    ],
    [
      {
        masters: [{ m1: { 'mac-address': mac(1) } }],
        workers: [{ w1: { 'mac-address': mac(2) } }, { w2: { 'mac-address': mac(2) } }],
      },
      'DuplicateMacAddress',
      /^MAC address 08:00:27:00:00:02 is given to both w1 and w2$/,
    ],
    [
      { masters: [{ m1: { 'mac-address': mac(1) } }, { m1: { 'mac-address': mac(2) } }] },
      'DuplicateNodeLabel',
      /A node with label m1 already exists/,
    ],
    [
      { masters: [{ m1: { 'mac-address': mac(1) } }], workers: [{ m1: null }, { m1: null }] },
      'DuplicateNodeLabel',
      /m1 is listed more than once/,
    ],
    [{ masters: [{ m1: { 'mac-address': 'nope' } }] }, 'InvalidMacAddress', /node m1/],
  ])('rejects %j with %s', (s, reason, message) => {
    const error = errorOf(() => planNodes(spec(s)));
    expect(error.reason).toBe(reason);
    expect(error.message).toMatch(message);
  });
});

describe('resolveCluster (bare metal)', () => {
  const hosts = [host(1, '10.0.0.1'), host(2), host(3, '10.0.0.3')];
  const p = provisioning({
    masters: [{ m1: { 'mac-address': mac(1) } }],
    workers: [{ w2: { 'mac-address': mac(2) } }],
  });

  it('tries the lease file first, then the NICs, by default', () => {
    const leases = parseLeases(`lease 10.9.9.1 { binding state active; hardware ethernet ${mac(1)}; }
lease 10.9.9.2 { binding state active; hardware ethernet ${mac(2)}; }`);
    const resolved = resolveCluster(p, { hosts, leases });
    expect(resolved.nodes.map((n) => [n.label, n.ip, n.source])).toEqual([
      ['m1', '10.9.9.1', 'dhcp-leases'],
      ['w2', '10.9.9.2', 'dhcp-leases'],
    ]);
    const nicsFirst = resolveCluster(p, { hosts, leases, ipSources: ['nics', 'leases'] });
    expect(nicsFirst.nodes.map((n) => [n.ip, n.source])).toEqual([
      ['10.0.0.1', 'host-nics'],
      ['10.9.9.2', 'dhcp-leases'],
    ]);
  });

  it('reports a worker without any IP with the host message', () => {
    const error = errorOf(() => resolveCluster(p, { hosts }));
    expect(error).toMatchObject({ reason: 'IpAddressNotFound', kind: 'resolution' });
    expect(error.message).toBe(`IP address not found for host with MAC address ${mac(2)}`);
  });

  it('finds a host by a NIC MAC that is not its boot MAC', () => {
    const other = host(9, '10.0.0.9', '08:00:27:00:00:99');
    const q = provisioning({ masters: [{ m1: { 'mac-address': '08:00:27:00:00:99' } }] });
    expect(resolveCluster(q, { hosts: [other] }).nodes[0]).toMatchObject({
      ip: '10.0.0.9',
      source: 'host-nics',
    });
  });

  it('ignores malformed MACs and IPs in host objects', () => {
    const broken: BareMetalHost = {
      metadata: { name: 'broken' },
      spec: { bootMACAddress: 'garbage' },
      status: { hardware: { nics: [{ mac: mac(1), ip: 'not an ip' }] } },
    };
    const q = provisioning({ masters: [{ m1: { 'mac-address': mac(1) } }] });
    expect(errorOf(() => resolveCluster(q, { hosts: [broken] })).reason).toBe('IpAddressNotFound');
  });

  it('says which MAC has no host, normalised', () => {
    const q = provisioning({ masters: [{ m1: { 'mac-address': '08-00-27-00-AB-3D' } }] });
    const error = errorOf(() => resolveCluster(q, { hosts }));
    expect(error).toMatchObject({
      reason: 'HostNotFound',
      message: 'Host with MAC Address 08:00:27:00:ab:3d not found',
    });
  });
});

describe('resolveCluster (Virtlet)', () => {
  const vm = (
    name: string,
    vmMac: string,
    extra: { podIP?: string; phase?: string; ips?: string[] } = {},
  ) => ({
    metadata: {
      name,
      annotations: {
        'kubernetes.io/target-runtime': 'virtlet.cloud',
        'k8s.v1.cni.cncf.io/network-status': JSON.stringify([
          { name: 'cbr0', mac: vmMac, ips: extra.ips ?? [] },
        ]),
      },
    },
    status: { phase: extra.phase ?? 'Running', ...(extra.podIP && { podIP: extra.podIP }) },
  });
  const p = provisioning(
    { masters: [{ m1: { 'mac-address': '52:54:00:00:00:01' } }] },
    { 'cluster-type': 'virtlet-vm' },
  );

  it('prefers status.podIP, else the first ips value', () => {
    expect(
      resolveCluster(p, { pods: [vm('a', '52:54:00:00:00:01', { podIP: '10.1.1.1', ips: ['10.2.2.2'] })] })
        .nodes[0],
    ).toMatchObject({
      ip: '10.1.1.1',
      source: 'virtlet-pod',
      roles: ['master', 'worker'],
    });
    expect(
      resolveCluster(p, { pods: [vm('a', '52:54:00:00:00:01', { ips: ['10.2.2.2'] })] }).nodes[0]?.ip,
    ).toBe('10.2.2.2');
  });

  it('reports a VM without IP or without a running pod with the VM message', () => {
    for (const pods of [
      [vm('a', '52:54:00:00:00:01')],
      [vm('a', '52:54:00:00:00:01', { podIP: '10.1.1.1', phase: 'Pending' })],
      [],
    ]) {
      expect(errorOf(() => resolveCluster(p, { pods })).message).toBe(
        'IP address not found for VM with MAC address 52:54:00:00:00:01',
      );
    }
  });

  it('ignores hosts and leases on the VM path', () => {
    expect(errorOf(() => resolveCluster(p, { hosts: [host(1, '10.0.0.1')] })).reason).toBe('VmNotFound');
  });
});
