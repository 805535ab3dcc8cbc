import type { z } from 'zod';
import { describeIssues } from '../../../shared/schemas/issues.js';
import { provisioningSchema } from '../../../shared/schemas/provisioning.js';
import { packageRequests, softwareSchema } from '../../../shared/schemas/software.js';

const base = {
  apiVersion: 'bpa.akraino.org/v1alpha1',
  kind: 'Provisioning',
  metadata: { name: 'p', labels: { cluster: 'c1' } },
  spec: { masters: [{ 'master-1': { 'mac-address': '08:00:27:00:00:01' } }] },
};

function problems(value: unknown, schema: z.ZodType = provisioningSchema) {
  const result = schema.safeParse(value);
  if (result.success) throw new Error('expected the value to be rejected');
  return describeIssues(result.error);
}

describe('Provisioning schema', () => {
  it('accepts the contract shapes, including null worker values and ignored fields', () => {
    const parsed = provisioningSchema.parse({
      ...base,
      metadata: { ...base.metadata, labels: { cluster: 'c1', 'cluster-type': 'virtlet-vm', other: 'x' } },
      spec: {
        masters: [{ 'master-1': { 'mac-address': '08:00:27:00:00:01', cpu: 4, memory: '8Gi' } }],
        workers: [
          { 'master-1': null },
          { w1: { 'mac-address': '08-00-27-00-00-02', sriov: true, qat: false } },
        ],
        KUDPlugins: ['onap4k8s'],
        PodSubnet: 'fd00::/64',
      },
    });
    expect(parsed.spec.workers?.[0]).toEqual({ 'master-1': null });
  });

  it.each([
    [{ ...base, metadata: { name: 'p', labels: {} } }, 'metadata.labels.cluster: is required'],
    [{ ...base, metadata: { name: 'p' } }, 'metadata.labels: is required'],
    [
      { ...base, metadata: { name: 'p', labels: { cluster: 'Bad_Name' } } },
      'metadata.labels.cluster: must be a DNS-1123 label',
    ],
    [
      { ...base, metadata: { name: 'p', labels: { cluster: 'a'.repeat(60) } } },
      'metadata.labels.cluster: must be at most 59 characters',
    ],
    [{ ...base, kind: 'Software' }, 'kind: must be "Provisioning"'],
    [{ ...base, apiVersion: 'v1' }, 'apiVersion: must be "bpa.akraino.org/v1alpha1"'],
    [{ ...base, spec: { masters: 'x' } }, 'spec.masters: expected an array, got a string'],
    [
      { ...base, spec: { masters: [{ a: {}, b: {} }] } },
      'spec.masters[0]: must be a map with exactly one node label (found a, b)',
    ],
    [
      { ...base, spec: { masters: [{ 'bad label': {} }] } },
      'spec.masters[0]: node label "bad label" is not valid',
    ],
    [
      { ...base, spec: { masters: [{ m: { 'mac-address': 42 } }] } },
      'spec.masters[0].m.mac-address: expected a string, got a number',
    ],
    [
      { ...base, spec: { ...base.spec, workers: [{ w: { sriov: 'yes' } }] } },
      'spec.workers[0].w.sriov: expected a boolean',
    ],
    [{ ...base, spec: { ...base.spec, PodSubnet: '10.0.0.0; rm -rf /' } }, 'spec.PodSubnet: must be a CIDR'],
    [
      { ...base, spec: { ...base.spec, KUDPlugins: ['ok', 'a b'] } },
      'spec.KUDPlugins[1]: must be a plugin name',
    ],
  ])('rejects %j: %s', (value, message) => {
    expect(problems(value)).toContain(message);
  });
});

describe('Software schema', () => {
  const software = (spec: object) => ({
    apiVersion: 'bpa.akraino.org/v1alpha1',
    kind: 'Software',
    metadata: { name: 's', labels: { cluster: 'c1' } },
    spec,
  });

  it('reads names and name=version maps', () => {
    const parsed = softwareSchema.parse(
      software({ masterSoftware: ['htop', { jq: { version: '1.6-2.1' } }] }),
    );
    expect(packageRequests(parsed.spec.masterSoftware)).toEqual([
      { name: 'htop' },
      { name: 'jq', version: '1.6-2.1' },
    ]);
    expect(packageRequests(parsed.spec.workerSoftware)).toEqual([]);
  });

  it.each([
    [{ masterSoftware: ['htop; reboot'] }, 'spec.masterSoftware[0]'],
    [{ workerSoftware: [{ jq: { version: '1.6 && reboot' } }] }, 'spec.workerSoftware[0]'],
    [{ workerSoftware: [{ 'Bad Name': { version: '1' } }] }, 'spec.workerSoftware[0]'],
  ])('rejects %j', (spec, where) => {
    expect(problems(software(spec), softwareSchema)).toContain(where);
  });
});
