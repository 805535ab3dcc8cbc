/**
 * withRecordedOwnership against a fake custom-objects client (unit): two deliveries of one Job
 * completion race, the other one created the object and records its uid a moment later. The
 * handler judges again on the owner as it is then, in the same request, instead of answering the
 * transient OwnershipPending (a 503 and a broker retry for every such completion); a look-alike
 * stays refused, and a record that never comes ends in the transient as before.
 */
import { describe, expect, it } from '@jest/globals';
import type { V1ObjectMeta } from '@kubernetes/client-node';
import { ownershipError, ownershipPendingReason } from '../../../shared/core/ownership.js';
import { BpaError } from '../../../shared/errors.js';
import type { KubeClients } from '../../../shared/k8s/clients.js';
import { ownedObjectsFields, ownershipOf, withRecordedOwnership } from '../../../shared/k8s/owned-objects.js';
import { provisioningTarget } from '../../../shared/k8s/provisioning.js';
import type { StoredObject } from '../../../shared/k8s/stored-object.js';

const owner = { namespace: 'tenant', name: 'edge', uid: 'p-1' };
const target = provisioningTarget('tenant', 'edge');
const configMap: V1ObjectMeta = {
  name: 'edge-configmap',
  namespace: 'tenant',
  uid: 'cm-1',
  creationTimestamp: new Date(),
};
const provisioning = (ownedObjects: unknown[] = [], uid = 'p-1'): StoredObject =>
  ({
    apiVersion: 'bpa.akraino.org/v1alpha1',
    kind: 'Provisioning',
    metadata: { name: 'edge', namespace: 'tenant', uid, generation: 1 },
    status: ownedObjects.length > 0 ? { ownedObjects } : {},
  }) as unknown as StoredObject;
const recorded = [{ kind: 'ConfigMap', namespace: 'tenant', name: 'edge-configmap', uid: 'cm-1' }];

/** The owner as the API server serves it: `reads` answers in turn, the last one from then on. */
function fakeClients(reads: StoredObject[]) {
  let count = 0;
  const custom = {
    getNamespacedCustomObject: async () => reads[Math.min(count++, reads.length - 1)],
  };
  return { clients: { custom } as unknown as KubeClients, reads: () => count };
}

/** Judges the ConfigMap against the owner given (what upsertConfigMap does before it writes). */
const judge = (stored: V1ObjectMeta) => async (current: StoredObject) => {
  const refused = ownershipError('ConfigMap', { metadata: stored }, ownershipOf(owner, current));
  if (refused) throw refused;
  return 'written';
};

describe('withRecordedOwnership', () => {
  it('goes on once the concurrent delivery has recorded the uid', async () => {
    const fake = fakeClients([provisioning(), provisioning(recorded)]);
    await expect(
      withRecordedOwnership(fake.clients, target, provisioning(), judge(configMap), { intervalMs: 10 }),
    ).resolves.toBe('written');
    expect(fake.reads()).toBe(2);
  });

  it('answers the transient OwnershipPending when no record comes in time', async () => {
    const fake = fakeClients([provisioning()]);
    const outcome = withRecordedOwnership(fake.clients, target, provisioning(), judge(configMap), {
      waitMs: 100,
      intervalMs: 10,
    });
    await expect(outcome).rejects.toMatchObject({ reason: ownershipPendingReason, kind: 'transient' });
    expect(fake.reads()).toBeGreaterThan(1);
  });

  it('refuses an old look-alike at once, without reading the owner again', async () => {
    const fake = fakeClients([provisioning()]);
    const old = { ...configMap, creationTimestamp: new Date(Date.now() - 60_000) };
    const outcome = withRecordedOwnership(fake.clients, target, provisioning(), judge(old), {
      intervalMs: 10,
    });
    await expect(outcome).rejects.toBeInstanceOf(BpaError);
    await expect(outcome).rejects.toMatchObject({ reason: 'ObjectConflict' });
    expect(fake.reads()).toBe(0);
  });

  it('stops waiting when the owner was replaced (another uid)', async () => {
    const fake = fakeClients([provisioning(recorded, 'p-2')]);
    const outcome = withRecordedOwnership(fake.clients, target, provisioning(), judge(configMap), {
      intervalMs: 10,
    });
    await expect(outcome).rejects.toMatchObject({ reason: ownershipPendingReason });
    expect(fake.reads()).toBe(1);
  });
});

/**
 * ownedObjectsFields: what a step's own status apply carries to record the objects it wrote (one
 * write instead of a record, then the step).
 */
describe('ownedObjectsFields', () => {
  const job: V1ObjectMeta = { name: 'kud-edge', namespace: 'bpa-system', uid: 'job-1' };

  it('restates the recorded list whole, with the missing objects added', () => {
    expect(
      ownedObjectsFields(provisioning(recorded), 'p-1', [
        { kind: 'ConfigMap', metadata: configMap },
        { kind: 'Job', metadata: job },
      ]),
    ).toEqual({
      ownedObjects: expect.arrayContaining([
        ...recorded,
        { kind: 'Job', namespace: 'bpa-system', name: 'kud-edge', uid: 'job-1' },
      ]),
    });
    expect(ownedObjectsFields(provisioning(recorded), 'p-1', [{ kind: 'Job', metadata: job }])).toMatchObject(
      {
        ownedObjects: { length: 2 },
      },
    );
  });

  it('replaces the entry of an object of the same name with an older uid', () => {
    const fields = ownedObjectsFields(provisioning(recorded), 'p-1', [
      { kind: 'ConfigMap', metadata: { ...configMap, uid: 'cm-2' } },
    ]);
    expect(fields).toEqual({
      ownedObjects: [{ kind: 'ConfigMap', namespace: 'tenant', name: 'edge-configmap', uid: 'cm-2' }],
    });
  });

  it('carries nothing when all are recorded, for another owner uid, or for objects without a uid', () => {
    expect(
      ownedObjectsFields(provisioning(recorded), 'p-1', [{ kind: 'ConfigMap', metadata: configMap }]),
    ).toBeUndefined();
    expect(
      ownedObjectsFields(provisioning([], 'p-2'), 'p-1', [{ kind: 'Job', metadata: job }]),
    ).toBeUndefined();
    expect(
      ownedObjectsFields(provisioning(), 'p-1', [{ kind: 'Job', metadata: { name: 'kud-edge' } }]),
    ).toBeUndefined();
  });
});
