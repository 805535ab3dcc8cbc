/**
 * host-lookup's first handling of a Provisioning records its labels with the step's ending, not
 * in a status write of its own (functions/host-lookup/lifecycle.ts `labelsWithEnding`); any
 * handling whose status already records something of an earlier one (labels, a retry value, a
 * renamed cluster) or that re-runs the chain writes them first, as before.
 */
import { describe, expect, it } from '@jest/globals';
import { labelsWithEnding } from '../../../functions/host-lookup/lifecycle.js';
import type { StoredObject } from '../../../shared/k8s/stored-object.js';

const labels = { cluster: 'edge', 'cluster-type': 'baremetal', unrelated: 'x' };
const metadata = { name: 'edge', namespace: 'tenant', uid: 'p-1', generation: 1, labels };
const provisioning = (status?: Record<string, unknown>) =>
  ({
    apiVersion: 'bpa.akraino.org/v1alpha1',
    kind: 'Provisioning',
    metadata,
    ...(status ? { status } : {}),
  }) as StoredObject;

describe('the labels a first handling records with its ending', () => {
  it('are the recorded label keys of a Provisioning with no status yet', () => {
    expect(labelsWithEnding(provisioning(), undefined)).toEqual({
      observedLabels: { cluster: 'edge', 'cluster-type': 'baremetal' },
    });
    expect(labelsWithEnding(provisioning({}), undefined)).toEqual({
      observedLabels: { cluster: 'edge', 'cluster-type': 'baremetal' },
    });
  });

  it.each([
    ['labels are recorded', { observedLabels: { cluster: 'edge' } }],
    ['a retry value is recorded', { retry: '1' }],
    [
      'a renamed cluster is being released',
      { releasingClusters: [{ cluster: 'old', since: '2026-12-01T00:00:00Z', launched: false }] },
    ],
  ])('are written first (none with the ending) when %s', (_what, status) => {
    expect(labelsWithEnding(provisioning(status), undefined)).toBeUndefined();
  });

  it('are written first when the chain re-runs', () => {
    expect(labelsWithEnding(provisioning(), 'labels changed')).toBeUndefined();
  });
});
