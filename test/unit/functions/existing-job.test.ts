/**
 * kud-job-launch's KUD Job for the plan (functions/kud-job-launch/existing-job.ts): taken from the
 * server's watch only when that agrees with what the Provisioning's status records (the Job of
 * the recorded uid, or no Job when none is recorded), read otherwise. Fakes for the watch and the
 * client: the watch itself is tested against the real API server
 * (test/integration/control-plane/watched-objects.test.ts).
 */
import { describe, expect, it } from '@jest/globals';
import type { V1Job } from '@kubernetes/client-node';
import { existingKudJob } from '../../../functions/kud-job-launch/existing-job.js';
import type { KubeClients } from '../../../shared/k8s/clients.js';
import type { StoredObject } from '../../../shared/k8s/stored-object.js';
import type { WatchedObjects } from '../../../shared/k8s/watched-objects.js';

const namespace = 'bpa-system';
const name = 'kud-edge';
const job = (uid: string): V1Job => ({ metadata: { name, namespace, uid, labels: { from: 'watch' } } });
const readJob: V1Job = { metadata: { name, namespace, uid: 'read', labels: { from: 'read' } } };

function provisioning(recordedUid?: string): StoredObject {
  return {
    apiVersion: 'bpa.akraino.org/v1alpha1',
    kind: 'Provisioning',
    metadata: { name: 'edge', namespace: 'tenant', uid: 'p-1', generation: 1 },
    status: recordedUid ? { ownedObjects: [{ kind: 'Job', namespace, name, uid: recordedUid }] } : {},
  } as StoredObject;
}

/** What the watch answers: undefined (not up), or the Job it holds (undefined: none). */
function watchAnswering(answer: { object: V1Job | undefined } | undefined): WatchedObjects {
  return { of: () => ({ latest: () => answer }) } as unknown as WatchedObjects;
}

function countingClients() {
  const reads: string[] = [];
  const clients = {
    batch: {
      readNamespacedJob: async (request: { name: string; namespace: string }) => {
        reads.push(`${request.namespace}/${request.name}`);
        return readJob;
      },
    },
  } as unknown as KubeClients;
  return { clients, reads };
}

describe('the KUD Job for the plan', () => {
  it('is none, with no read, when the status records no Job and the watch holds none', async () => {
    const { clients, reads } = countingClients();
    const found = await existingKudJob(
      clients,
      watchAnswering({ object: undefined }),
      provisioning(),
      namespace,
      name,
    );
    expect(found).toBeUndefined();
    expect(reads).toEqual([]);
  });

  it('is the watch’s, with no read, when it holds the Job of the uid the status records', async () => {
    const { clients, reads } = countingClients();
    const found = await existingKudJob(
      clients,
      watchAnswering({ object: job('j-1') }),
      provisioning('j-1'),
      namespace,
      name,
    );
    expect(found?.metadata?.labels?.from).toBe('watch');
    expect(reads).toEqual([]);
  });

  it.each([
    [
      'the watch holds a Job the status does not record (another owner’s, or not recorded yet)',
      { object: job('j-9') },
      undefined,
    ],
    ['the status records a Job the watch has not sent', { object: undefined }, 'j-1'],
    ['the watch holds another Job than the one recorded', { object: job('j-2') }, 'j-1'],
    ['the watch is not up', undefined, undefined],
  ])('is read when %s', async (_what, answer, recorded) => {
    const { clients, reads } = countingClients();
    const found = await existingKudJob(
      clients,
      watchAnswering(answer),
      provisioning(recorded),
      namespace,
      name,
    );
    expect(found?.metadata?.labels?.from).toBe('read');
    expect(reads).toEqual([`${namespace}/${name}`]);
  });

  it('is read when the server keeps no watch', async () => {
    const { clients, reads } = countingClients();
    expect((await existingKudJob(clients, undefined, provisioning(), namespace, name))?.metadata?.uid).toBe(
      'read',
    );
    expect(reads).toHaveLength(1);
  });
});
