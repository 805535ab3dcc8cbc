import { isDeepStrictEqual } from 'node:util';
import { BpaError, transient } from '../errors.js';
import { imageStall, KstatusCondition } from '../core/kstatus.js';
import type { ResourceRef } from '../events/types.js';
import type { Condition } from '../schemas/kube.js';
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
import { sameCondition, type ConditionUpdate } from './conditions.js';
import type { CustomResource } from './resources.js';
import type { ObjectIdentity } from './stored-object.js';
import { applyStatusDecided, type StatusDecision } from './status-apply.js';

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
 * What `manager` applies to turn the live status into `wanted` (status-apply.ts): the conditions
 * that changed, the fields that changed (a field `wanted` lacks is dropped), the conditions
 * `wanted` lacks removed; observedGeneration and the kstatus conditions are derived, never taken
 * from `wanted`. Undefined when nothing changes.
 */
export function imageStatusDecision(live: StoredImage, wanted: ImageStatus): StatusDecision | undefined {
  const derived = new Set<string>(['observedGeneration', 'conditions']);
  const derivedConditions = new Set<string>([KstatusCondition.reconciling, KstatusCondition.stalled]);
  const before: Record<string, unknown> = live.status ?? {};
  const after: Record<string, unknown> = wanted;
  const fields: Record<string, unknown> = {};
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)]))
    if (!derived.has(key) && !isDeepStrictEqual(before[key], after[key])) fields[key] = after[key];
  const liveConditions = (live.status?.conditions ?? []).filter((c) => !derivedConditions.has(c.type));
  const wantedConditions = (wanted.conditions ?? []).filter((c) => !derivedConditions.has(c.type));
  const conditions: ConditionUpdate[] = wantedConditions
    .filter(
      (c) =>
        !sameCondition(
          liveConditions.find((l) => l.type === c.type),
          conditionUpdate(c),
        ),
    )
    .map(conditionUpdate);
  const removeConditions = liveConditions
    .filter((c) => !wantedConditions.some((w) => w.type === c.type))
    .map((c) => c.type);
  if (Object.keys(fields).length === 0 && conditions.length === 0 && removeConditions.length === 0)
    return undefined;
  return {
    conditions,
    fields,
    ...(removeConditions.length > 0 ? { removeConditions } : {}),
    stalls: imageStall(typeof after.phase === 'string' ? after.phase : undefined),
  };
}

const conditionUpdate = (c: Condition): ConditionUpdate => ({
  type: c.type,
  status: c.status,
  reason: c.reason ?? '',
  message: c.message ?? '',
  ...(c.observedGeneration === undefined ? {} : { observedGeneration: c.observedGeneration }),
});

/**
 * The Image's status as `manager` (fieldManagerFor(function)) wants it: `mutate` gets the fresh
 * Image and returns the whole status it wants (or undefined: nothing to write); what differs from
 * the live status is applied by server-side apply, conditional on the read (applyStatusDecided:
 * a 409 reads again and decides again). Undefined when the Image is gone.
 */
export async function updateImageStatus(
  clients: KubeClients,
  manager: string,
  namespace: string,
  name: string,
  mutate: (fresh: StoredImage) => ImageStatus | undefined,
): Promise<StoredImage | undefined> {
  const result = await applyStatusDecided(
    clients,
    { resource: imagesResource, namespace, name },
    manager,
    (fresh) => {
      const image = imageSchema.parse(fresh) as StoredImage;
      const wanted = mutate(image);
      return wanted === undefined ? undefined : imageStatusDecision(image, wanted);
    },
  );
  return result.outcome === 'gone' ? undefined : (imageSchema.parse(result.object) as StoredImage);
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
