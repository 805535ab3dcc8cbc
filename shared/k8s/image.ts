import { BpaError, transient } from '../errors.js';
import { imageStall, withKstatus } from '../core/kstatus.js';
import type { ResourceRef } from '../events/types.js';
import {
  imageApiVersion,
  imageGroup,
  imageKind,
  imagePlural,
  imageSchema,
  imageVersion,
  type Image,
  type ImageStatus,
} from '../schemas/image.js';
import { classifyApiError, isConflict, isNotFound } from './api-errors.js';
import type { KubeClients } from './clients.js';
import type { CustomResource } from './resources.js';
import type { ObjectIdentity } from './stored-object.js';

export const imagesResource: CustomResource = {
  group: imageGroup,
  version: imageVersion,
  plural: imagePlural,
};

/** The Image's condition types: Uploaded (bytes stored), Ready (verified and downloadable). */
export const ImageCondition = { uploaded: 'Uploaded', ready: 'Ready' } as const;

/** What the API server returns for an Image: the parsed object, or why it cannot be read. */
export type StoredImage = Image & {
  metadata: Image['metadata'] & {
    uid: string;
    generation: number;
    resourceVersion: string;
    namespace: string;
  };
};

const where = (namespace: string, name: string) => ({ ...imagesResource, namespace, name });

/** Reads an Image; undefined when there is none. A stored object that fails the schema is an error. */
export async function readImage(
  clients: KubeClients,
  namespace: string,
  name: string,
): Promise<StoredImage | undefined> {
  let raw: unknown;
  try {
    raw = await clients.custom.getNamespacedCustomObject(where(namespace, name));
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw classifyApiError(error, `read Image ${namespace}/${name}`);
  }
  return imageSchema.parse(raw) as StoredImage;
}

/** Creates an Image; 'exists' when the name is taken (the caller decides what that means). */
export async function createImage(
  clients: KubeClients,
  namespace: string,
  name: string,
  spec: Image['spec'],
  labels: Record<string, string>,
): Promise<StoredImage | 'exists'> {
  try {
    const created = await clients.custom.createNamespacedCustomObject({
      ...imagesResource,
      namespace,
      body: { apiVersion: imageApiVersion, kind: imageKind, metadata: { name, namespace, labels }, spec },
    });
    return imageSchema.parse(created) as StoredImage;
  } catch (error) {
    if (isConflict(error)) return 'exists';
    throw classifyApiError(error, `create Image ${namespace}/${name}`);
  }
}

/** Replaces the Image's spec (PUT of the original's metadata), keeping everything else. */
/**
 * Replaces the spec of this Image (the same uid): a 409 (its status moved meanwhile: the upload's
 * completion, image-verify) re-reads it and writes the spec again, a few times, so a user's PUT is
 * never refused for a write of ours. Gone or replaced by another of the name: ImageNotFound (404).
 */
export async function replaceImageSpec(
  clients: KubeClients,
  image: StoredImage,
  spec: Image['spec'],
  maxAttempts = 5,
): Promise<StoredImage> {
  const { namespace, name, uid } = image.metadata;
  let current: StoredImage | undefined = image;
  for (let attempt = 1; attempt <= maxAttempts && current; attempt++) {
    let replaced: unknown;
    try {
      replaced = await clients.custom.replaceNamespacedCustomObject({
        ...where(namespace, name),
        body: { ...current, spec },
      });
    } catch (error) {
      if (!isConflict(error) && !isNotFound(error))
        throw classifyApiError(error, `update Image ${namespace}/${name}`);
      const fresh = await readImage(clients, namespace, name);
      current = fresh?.metadata.uid === uid ? fresh : undefined;
      continue;
    }
    return imageSchema.parse(replaced) as StoredImage;
  }
  if (!current) throw new BpaError('ImageNotFound', `Image ${namespace}/${name} is gone`, 'invalid');
  throw transient('StatusConflict', `Image ${namespace}/${name} kept changing (${maxAttempts} attempts)`);
}

export async function deleteImage(clients: KubeClients, namespace: string, name: string): Promise<boolean> {
  try {
    await clients.custom.deleteNamespacedCustomObject(where(namespace, name));
    return true;
  } catch (error) {
    if (isNotFound(error)) return false;
    throw classifyApiError(error, `delete Image ${namespace}/${name}`);
  }
}

/**
 * Read-modify-write of the status: `mutate` gets the fresh Image and returns the new status (or
 * undefined: nothing to write). A 409 re-reads and re-applies, a few times.
 */
export async function updateImageStatus(
  clients: KubeClients,
  namespace: string,
  name: string,
  mutate: (fresh: StoredImage) => ImageStatus | undefined,
  maxAttempts = 5,
): Promise<StoredImage | undefined> {
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    const fresh = await readImage(clients, namespace, name);
    if (!fresh) return undefined;
    const status = mutate(fresh);
    if (status === undefined) return fresh;
    try {
      const stored = await clients.custom.replaceNamespacedCustomObjectStatus({
        ...where(namespace, name),
        // observedGeneration and the kstatus conditions (Reconciling, Stalled), derived in one place.
        body: { ...fresh, status: withKstatus(fresh, status, imageStall(status.phase)) },
      });
      return imageSchema.parse(stored) as StoredImage;
    } catch (error) {
      if (isConflict(error)) continue;
      if (isNotFound(error)) return undefined;
      throw classifyApiError(error, `update the status of Image ${namespace}/${name}`);
    }
  }
  throw transient(
    'StatusConflict',
    `The status of Image ${namespace}/${name} kept changing (${maxAttempts} attempts)`,
  );
}

export const imageRef = (image: StoredImage): ResourceRef => ({
  namespace: image.metadata.namespace,
  name: image.metadata.name,
  uid: image.metadata.uid,
  generation: image.metadata.generation,
});

export const imageIdentity = (image: StoredImage): ObjectIdentity => ({
  apiVersion: imageApiVersion,
  kind: imageKind,
  namespace: image.metadata.namespace,
  name: image.metadata.name,
  uid: image.metadata.uid,
});

/** Every Image of a namespace (the image service's quota adds up their lengths). */
export async function listImages(clients: KubeClients, namespace: string): Promise<Image[]> {
  let raw: { items?: unknown[] };
  try {
    raw = (await clients.custom.listNamespacedCustomObject({ ...imagesResource, namespace })) as {
      items?: unknown[];
    };
  } catch (error) {
    throw classifyApiError(error, `list Images in namespace ${namespace}`);
  }
  return (raw.items ?? []).map((item) => imageSchema.parse(item));
}
