import {
  hostReadiness,
  judgeHostProvisioning,
  metal3StateOf,
} from '../../../shared/core/host-provisioning.js';
import { indexHostsByMac } from '../../../shared/core/host-index.js';
import { bareMetalHostSchema } from '../../../shared/schemas/bare-metal-host.js';

/** A BareMetalHost as Metal3 writes its status (v0.6.0 field names). */
const bmh = (name: string, status: Record<string, unknown>) =>
  bareMetalHostSchema.parse({
    apiVersion: 'metal3.io/v1alpha1',
    kind: 'BareMetalHost',
    metadata: { name, namespace: 'metal3' },
    spec: { bootMACAddress: '08:00:27:00:00:01', online: true },
    status: { errorMessage: '', errorCount: 0, hardware: { nics: [] }, ...status },
  });

describe('Metal3 provisioning state of a host (contract section 13)', () => {
  it('is ready only when provisioned or externally provisioned', () => {
    expect(hostReadiness('metal3/h1', { state: 'provisioned', operationalStatus: 'OK' })).toEqual({
      kind: 'ready',
    });
    expect(hostReadiness('metal3/h1', { state: 'externally provisioned' })).toEqual({ kind: 'ready' });
    for (const state of ['registering', 'inspecting', 'available', 'provisioning', 'deprovisioning', 'ready'])
      expect(hostReadiness('metal3/h1', { state })).toEqual({ kind: 'waiting', state });
    expect(hostReadiness('metal3/h1', undefined)).toEqual({
      kind: 'waiting',
      state: 'no provisioning state yet',
    });
  });

  it("reports Metal3's error states with Metal3's message, before the state", () => {
    expect(
      hostReadiness('metal3/h1', {
        state: 'provisioning',
        operationalStatus: 'error',
        errorType: 'provisioning error',
        errorMessage: 'Image checksum mismatch',
      }),
    ).toEqual({
      kind: 'error',
      message: "BareMetalHost metal3/h1 is in Metal3's provisioning error: Image checksum mismatch",
    });
    // A provisioned host with a power management error is not one to install on.
    expect(
      hostReadiness('metal3/h1', { state: 'provisioned', errorType: 'power management error' }).kind,
    ).toBe('error');
    expect(hostReadiness('metal3/h1', { state: 'available', operationalStatus: 'error' })).toEqual({
      kind: 'error',
      message: "BareMetalHost metal3/h1 is in Metal3's error",
    });
  });

  it('reads the fields from a parsed BareMetalHost and carries them in the MAC index', () => {
    const host = bmh('h1', {
      operationalStatus: 'OK',
      provisioning: { ID: 'x', state: 'provisioning', image: { url: '' } },
    });
    expect(metal3StateOf(host)).toEqual({ state: 'provisioning', operationalStatus: 'OK' });
    expect(indexHostsByMac([host]).get('08:00:27:00:00:01')?.metal3).toEqual({
      state: 'provisioning',
      operationalStatus: 'OK',
    });
    expect(metal3StateOf(bmh('h2', {}))).toBeUndefined();
  });
});

describe('judgeHostProvisioning', () => {
  it('waits while any host is not provisioned, naming each with its state', () => {
    expect(
      judgeHostProvisioning([
        { host: 'metal3/h1', metal3: { state: 'provisioned' } },
        { host: 'metal3/h2', metal3: { state: 'provisioning' } },
        { host: 'metal3/h3' },
      ]),
    ).toEqual({
      kind: 'waiting',
      hosts: ['metal3/h2 (provisioning)', 'metal3/h3 (no provisioning state yet)'],
      message:
        'Waiting for Metal3 to provision 2 hosts: metal3/h2 (provisioning), metal3/h3 (no provisioning state yet); KUD starts once every host is provisioned',
    });
  });

  it('is ready when every host is, and judges a host named twice once', () => {
    expect(
      judgeHostProvisioning([
        { host: 'metal3/h1', metal3: { state: 'provisioned' } },
        { host: 'metal3/h2', metal3: { state: 'externally provisioned' } },
      ]),
    ).toEqual({ kind: 'ready' });
    const twice = judgeHostProvisioning([
      { host: 'metal3/h1', metal3: { state: 'inspecting' } },
      { host: 'metal3/h1', metal3: { state: 'inspecting' } },
    ]);
    expect(twice.kind === 'waiting' && twice.hosts).toEqual(['metal3/h1 (inspecting)']);
  });

  it('fails on any error, even while others wait', () => {
    expect(
      judgeHostProvisioning([
        { host: 'metal3/h1', metal3: { state: 'provisioning' } },
        {
          host: 'metal3/h2',
          metal3: { state: 'registering', errorType: 'registration error', errorMessage: 'bad credentials' },
        },
      ]),
    ).toEqual({
      kind: 'failed',
      message: "BareMetalHost metal3/h2 is in Metal3's registration error: bad credentials",
    });
  });

  it('keeps the message short for a large cluster', () => {
    const hosts = Array.from({ length: 25 }, (_, i) => ({
      host: `metal3/h${i}`,
      metal3: { state: 'provisioning' },
    }));
    const verdict = judgeHostProvisioning(hosts);
    expect(verdict.kind).toBe('waiting');
    if (verdict.kind !== 'waiting') return;
    expect(verdict.message).toContain('metal3/h9 (provisioning), and 15 more;');
    expect(verdict.message).not.toContain('metal3/h10 ');
    expect(verdict.hosts).toHaveLength(25);
  });
});
