import { indexHostsByMac } from '../../../shared/core/host-index.js';
import { planNodes } from '../../../shared/core/node-plan.js';
import { preflight } from '../../../shared/core/preflight.js';
import { coreCount, quantityBytes } from '../../../shared/core/quantity.js';
import { renderCluster } from '../../../shared/core/render.js';
import { BpaError } from '../../../shared/errors.js';
import { bareMetalHostSchema } from '../../../shared/schemas/bare-metal-host.js';
import { provisioningSchema, type ProvisioningSpec } from '../../../shared/schemas/provisioning.js';

const Gi = 2 ** 30;

describe('Kubernetes memory quantities', () => {
  it('reads binary, decimal and exponent suffixes and plain bytes', () => {
    expect(quantityBytes('16Gi')).toBe(16 * Gi);
    expect(quantityBytes('16384Mi')).toBe(16 * Gi);
    expect(quantityBytes('17179869184')).toBe(16 * Gi);
    expect(quantityBytes(17179869184)).toBe(16 * Gi);
    expect(quantityBytes('16G')).toBe(16e9);
    expect(quantityBytes('1.5Gi')).toBe(1.5 * Gi);
    expect(quantityBytes('129e6')).toBe(129e6);
    expect(quantityBytes('128974848000m')).toBe(128974848);
    expect(quantityBytes('1Ki')).toBe(1024);
    expect(quantityBytes('2k')).toBe(2000);
    expect(quantityBytes(' 8Ti ')).toBe(8 * 2 ** 40);
    // Fractions of a byte round up, as Kubernetes does.
    expect(quantityBytes('0.5')).toBe(1);
  });

  it('refuses what is not a quantity', () => {
    for (const text of ['', '16GB', '16gi', 'Gi', '-1Gi', '16 Gi', '1.2.3', 'lots', '0x10', '1e400'])
      expect({ text, bytes: quantityBytes(text) }).toEqual({ text, bytes: undefined });
    expect(quantityBytes(-1)).toBeUndefined();
    expect(quantityBytes(Number.NaN)).toBeUndefined();
  });

  it('counts cores as positive integers, as numbers or text', () => {
    expect(coreCount(8)).toBe(8);
    expect(coreCount('8')).toBe(8);
    for (const value of [0, -1, 2.5, '2.5', '500m', '', 'eight', Number.NaN])
      expect({ value, count: coreCount(value) }).toEqual({ value, count: undefined });
  });
});

const mac1 = '08:00:27:00:00:01';
const mac2 = '08:00:27:00:00:02';

const spec = (master: Record<string, unknown>, worker?: Record<string, unknown>): ProvisioningSpec => ({
  masters: [{ 'master-1': { 'mac-address': mac1, ...master } }],
  ...(worker ? { workers: [{ 'worker-1': { 'mac-address': mac2, ...worker } }] } : {}),
});

/** A BareMetalHost as Metal3 writes it after inspection (v0.6.0 field names). */
const bmh = (name: string, mac: string, status: Record<string, unknown>) =>
  bareMetalHostSchema.parse({
    apiVersion: 'metal3.io/v1alpha1',
    kind: 'BareMetalHost',
    metadata: { name, namespace: 'metal3' },
    spec: { bootMACAddress: mac, online: true },
    status,
  });
const inspected = (cpus: number, ramMebibytes: number, state = 'available') => ({
  provisioning: { state },
  operationalStatus: 'OK',
  hardware: { cpu: { arch: 'x86_64', count: cpus }, ramMebibytes, nics: [] },
});

describe('cpu and memory of a node (spec rules)', () => {
  it('are kept, checked, on the planned node', () => {
    const plan = planNodes(spec({ cpu: 8, memory: '16Gi' }, { cpu: '4' }));
    expect(plan.nodes.map((n) => n.requires)).toEqual([
      { cpu: 8, memory: { text: '16Gi', bytes: 16 * Gi } },
      { cpu: 4 },
    ]);
  });

  it('are absent from a node that gives neither (old Provisionings are unchanged)', () => {
    expect(planNodes(spec({})).nodes[0]).toEqual({
      label: 'master-1',
      mac: mac1,
      roles: ['master', 'worker'],
    });
  });

  it('name the node when invalid (InvalidProvisioning)', () => {
    const refused = (s: ProvisioningSpec) => {
      try {
        planNodes(s);
      } catch (error) {
        return error instanceof BpaError
          ? { reason: error.reason, kind: error.kind, message: error.message }
          : error;
      }
      return 'accepted';
    };
    expect(refused(spec({ memory: '16GB' }))).toEqual({
      reason: 'InvalidProvisioning',
      kind: 'invalid',
      message:
        'Node master-1: memory "16GB" is not a Kubernetes quantity of memory (e.g. 16Gi, 16384Mi, 16G or 17179869184 bytes)',
    });
    expect(refused(spec({}, { cpu: 0 }))).toEqual({
      reason: 'InvalidProvisioning',
      kind: 'invalid',
      message: 'Node worker-1: cpu 0 is not a number of cores (a positive integer, e.g. 8)',
    });
    expect(refused(spec({ memory: '0' }))).toMatchObject({ reason: 'InvalidProvisioning' });
  });

  it('take the larger of a master and its worker entry', () => {
    const plan = planNodes({
      masters: [{ 'master-1': { 'mac-address': mac1, cpu: 8, memory: '8Gi' } }],
      workers: [{ 'master-1': { cpu: 4, memory: '16Gi' } }],
    });
    expect(plan.nodes[0]?.requires).toEqual({ cpu: 8, memory: { text: '16Gi', bytes: 16 * Gi } });
  });
});

describe('the preflight (contract section 14)', () => {
  const judge = (s: ProvisioningSpec, hosts: ReturnType<typeof bmh>[], mode: 'wait' | 'skip' = 'wait') =>
    preflight(planNodes(s).nodes, indexHostsByMac(hosts), mode);

  it('passes a host with at least what is asked, and nodes that ask nothing', () => {
    expect(judge(spec({ cpu: 8, memory: '16Gi' }), [bmh('h1', mac1, inspected(8, 16384))])).toEqual({
      kind: 'passed',
    });
    expect(judge(spec({ memory: '16G' }), [bmh('h1', mac1, inspected(1, 15259))])).toEqual({
      kind: 'passed',
    });
    // Nothing asked: not even an uninspected host is waited for.
    expect(judge(spec({}), [bmh('h1', mac1, {})])).toEqual({ kind: 'passed' });
  });

  it('fails naming the host, what it has and what the node asks', () => {
    expect(
      judge(spec({ cpu: 8, memory: '16Gi' }, { memory: '4Gi' }), [
        bmh('bmh-1', mac1, inspected(4, 8192)),
        bmh('bmh-2', mac2, inspected(2, 4096)),
      ]),
    ).toEqual({
      kind: 'failed',
      reason: 'PreflightFailed',
      message: `Host metal3/bmh-1 (MAC ${mac1}) has 4 CPUs and 8192 MiB of memory; node master-1 asks for 8 CPUs and 16Gi of memory`,
    });
    expect(judge(spec({ cpu: 2 }), [bmh('bmh-1', mac1, inspected(1, 8192))])).toMatchObject({
      message: `Host metal3/bmh-1 (MAC ${mac1}) has 1 CPU; node master-1 asks for 2 CPUs`,
    });
    // One MiB short is short.
    expect(judge(spec({ memory: '16Gi' }), [bmh('bmh-1', mac1, inspected(8, 16383))])).toMatchObject({
      kind: 'failed',
    });
  });

  it('waits for a host Metal3 has not inspected yet, and fails one it never will', () => {
    expect(
      judge(spec({ memory: '16Gi' }), [bmh('bmh-1', mac1, { provisioning: { state: 'inspecting' } })]),
    ).toEqual({
      kind: 'waiting',
      message:
        'Waiting for Metal3 to inspect 1 host for the preflight: metal3/bmh-1 (inspecting; node master-1 asks for 16Gi of memory); no host is claimed or given an image until then',
    });
    expect(judge(spec({ cpu: 2 }), [bmh('bmh-1', mac1, {})])).toMatchObject({ kind: 'waiting' });
    expect(
      judge(spec({ cpu: 2 }), [bmh('bmh-1', mac1, { provisioning: { state: 'externally provisioned' } })]),
    ).toEqual({
      kind: 'failed',
      reason: 'PreflightFailed',
      message: `Host metal3/bmh-1 (MAC ${mac1}) reports no inspected CPU count in status.hardware (Metal3 state externally provisioned); node master-1 asks for 2 CPUs`,
    });
    expect(
      judge(spec({ cpu: 2 }), [
        bmh('bmh-1', mac1, {
          provisioning: { state: 'registering' },
          errorType: 'registration error',
          errorMessage: 'Failed to get power state',
        }),
      ]),
    ).toEqual({
      kind: 'failed',
      reason: 'HostProvisioningFailed',
      message: "BareMetalHost metal3/bmh-1 is in Metal3's registration error: Failed to get power state",
    });
  });

  it('checks only what hand-written hosts report in skip mode (bpa render)', () => {
    expect(judge(spec({ cpu: 2, memory: '1Gi' }), [bmh('bmh-1', mac1, {})], 'skip')).toEqual({
      kind: 'passed',
    });
    expect(
      judge(
        spec({ cpu: 2, memory: '16Gi' }),
        [bmh('bmh-1', mac1, { hardware: { ramMebibytes: 1024 } })],
        'skip',
      ),
    ).toMatchObject({
      message: `Host metal3/bmh-1 (MAC ${mac1}) has no inspected CPU count and 1024 MiB of memory; node master-1 asks for 2 CPUs and 16Gi of memory`,
    });
  });

  it('stops bpa render with PreflightFailed before any IP is looked for', () => {
    const provisioning = provisioningSchema.parse({
      apiVersion: 'bpa.akraino.org/v1alpha1',
      kind: 'Provisioning',
      metadata: { name: 'p', namespace: 'default', labels: { cluster: 'c1' } },
      spec: spec({ cpu: 16 }),
    });
    const host = bmh('bmh-1', mac1, inspected(8, 8192));
    expect(() => renderCluster(provisioning, { hosts: [host] })).toThrow(
      expect.objectContaining({ reason: 'PreflightFailed', kind: 'resolution' }),
    );
    const small = provisioningSchema.parse({ ...provisioning, spec: spec({ cpu: 8 }) });
    // Passes the preflight; then the IP is what is missing.
    expect(() => renderCluster(small, { hosts: [host] })).toThrow(
      expect.objectContaining({ reason: 'IpAddressNotFound' }),
    );
  });
});
