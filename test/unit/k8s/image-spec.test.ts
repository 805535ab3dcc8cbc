/**
 * replaceImageSpec against a fake custom-objects client (unit): a user's PUT of an Image's
 * metadata must not be refused because one of our own status writes (the upload's completion,
 * image-verify) moved the resourceVersion between the handler's read and its write. The real API
 * server's 409 on a stale resourceVersion is what the fake answers; test/integration/images covers
 * the route against the real one.
 */
import { describe, expect, it } from '@jest/globals';
import { replaceImageSpec, type StoredImage } from '../../../shared/k8s/image.js';
import type { KubeClients } from '../../../shared/k8s/clients.js';
import { BpaError } from '../../../shared/errors.js';

const stored = (resourceVersion: string, uid = 'uid-1'): StoredImage =>
  ({
    apiVersion: 'bpa.akraino.org/v1alpha1',
    kind: 'Image',
    metadata: { name: 'beta.container.q', namespace: 'tenant', uid, resourceVersion, generation: 1 },
    spec: { type: 'container', owner: 'tenant', clusterName: 'beta', imageName: 'q', length: 4 },
    status: { phase: 'Ready' },
  }) as unknown as StoredImage;

/** A store that holds one Image and refuses a write whose resourceVersion is not the current one. */
function fakeStore(initial: StoredImage, statusWritesBeforeFirstReplace: number) {
  let current = initial;
  let pendingStatusWrites = statusWritesBeforeFirstReplace;
  const writes: string[] = [];
  const custom = {
    getNamespacedCustomObject: async () => current,
    replaceNamespacedCustomObject: async ({ body }: { body: StoredImage }) => {
      // Our own status write lands between the caller's read and its replace.
      if (pendingStatusWrites-- > 0)
        current = {
          ...current,
          metadata: {
            ...current.metadata,
            resourceVersion: String(Number(current.metadata.resourceVersion) + 1),
          },
        };
      if (body.metadata.resourceVersion !== current.metadata.resourceVersion)
        throw Object.assign(new Error('Operation cannot be fulfilled: the object has been modified'), {
          code: 409,
        });
      writes.push(body.metadata.resourceVersion ?? '');
      current = {
        ...body,
        metadata: { ...body.metadata, resourceVersion: String(Number(body.metadata.resourceVersion) + 1) },
      };
      return current;
    },
  };
  return { clients: { custom } as unknown as KubeClients, writes, now: () => current };
}

describe('replaceImageSpec', () => {
  const spec = { ...stored('1').spec, expectedChecksum: { sha256: 'a'.repeat(64) } } as StoredImage['spec'];

  it('writes the new spec on the fresh object when a status write raced it (409), keeping the status', async () => {
    const store = fakeStore(stored('1'), 1);
    const updated = await replaceImageSpec(store.clients, stored('1'), spec);
    expect(updated.spec).toEqual(spec);
    expect(store.writes).toEqual(['2']);
    expect(store.now().status).toEqual({ phase: 'Ready' });
  });

  it('gives up after its attempts with a transient StatusConflict (503), never a 409 to the user', async () => {
    const store = fakeStore(stored('1'), 100);
    const failure = await replaceImageSpec(store.clients, stored('1'), spec, 3).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(BpaError);
    expect(failure).toMatchObject({ reason: 'StatusConflict', kind: 'transient' });
  });

  it('an Image deleted and created again under the name (another uid) is ImageNotFound, never overwritten', async () => {
    const store = fakeStore(stored('5', 'uid-2'), 0);
    const failure = await replaceImageSpec(store.clients, stored('1'), spec).catch((e: unknown) => e);
    expect(failure).toMatchObject({ reason: 'ImageNotFound' });
    expect(store.writes).toEqual([]);
  });
});
