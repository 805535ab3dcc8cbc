import type { V1ObjectMeta } from '@kubernetes/client-node';
import { ownedObjectSchema, type OwnedObject } from '../schemas/provisioning.js';
import {
  clusterLabel,
  managedByLabel,
  managedByValue,
  provisioningNameAnnotation,
  provisioningNamespaceAnnotation,
  provisioningUidLabel,
} from './names.js';
import type { ProvisioningOwner } from './owner.js';
import { BpaError, transient } from '../errors.js';
import { Reason } from '../reasons.js';

export type { OwnedObject };

/**
 * Never adopt, by uid (contract section 12, ADR 0013 point 2). An object counts as the
 * functions' own only when its uid is the one recorded in the owner's `status.ownedObjects`
 * when it was created: labels and owner references can be forged by anyone who may create that
 * kind in the namespace, so neither counts. One exception: in the functions' own namespace, which
 * tenants cannot write, an object carrying the Provisioning's uid label that is not recorded yet
 * (a crash between its create and the status write) is the functions' too.
 */
export interface Ownership {
  owner: ProvisioningOwner;
  /** The owner's status.ownedObjects, as read. */
  owned: readonly OwnedObject[];
  /** The functions' own namespace (FUNCTIONS_NAMESPACE), where the uid label is trusted. */
  functionsNamespace?: string;
}

export const ownedObjectsField = 'ownedObjects';

/** The well-formed entries of status.ownedObjects (anything else is ignored, never trusted). */
export function ownedObjectsOf(status: Record<string, unknown> | undefined): OwnedObject[] {
  const list = status?.[ownedObjectsField];
  if (!Array.isArray(list)) return [];
  return list.flatMap((item) => {
    const parsed = ownedObjectSchema.safeParse(item);
    return parsed.success ? [parsed.data] : [];
  });
}

const sameObject = (a: Omit<OwnedObject, 'uid'>, b: Omit<OwnedObject, 'uid'>) =>
  a.kind === b.kind && a.namespace === b.namespace && a.name === b.name;

/** The list with `entry` recorded (an older uid of the same kind/namespace/name is replaced). */
export function withOwnedObject(owned: readonly OwnedObject[], entry: OwnedObject): OwnedObject[] {
  return [...owned.filter((item) => !sameObject(item, entry)), entry];
}

/** The list without the entry of that kind/namespace/name (the object was deleted). */
export function withoutOwnedObject(
  owned: readonly OwnedObject[],
  entry: Omit<OwnedObject, 'uid'>,
): OwnedObject[] {
  return owned.filter((item) => !sameObject(item, entry));
}

/** The entry describing a stored object, when it has a uid. */
export function ownedEntry(kind: string, metadata: V1ObjectMeta | undefined): OwnedObject | undefined {
  const { namespace, name, uid } = metadata ?? {};
  return namespace && name && uid ? { kind, namespace, name, uid } : undefined;
}

/** Labelled by the functions for this Provisioning's uid (trusted in the functions' namespace only). */
export const carriesOwnerUid = (metadata: V1ObjectMeta | undefined, uid: string) =>
  metadata?.labels?.[managedByLabel] === managedByValue && metadata.labels[provisioningUidLabel] === uid;

/** True when the stored object is the functions' own for this owner (see Ownership). */
export function isOwned(kind: string, metadata: V1ObjectMeta | undefined, ownership: Ownership): boolean {
  const uid = metadata?.uid;
  if (!metadata || !uid) return false;
  const namespace = metadata.namespace ?? ownership.owner.namespace;
  const entry = { kind, namespace, name: metadata.name ?? '', uid };
  if (ownership.owned.some((item) => sameObject(item, entry) && item.uid === uid)) return true;
  return (
    ownership.functionsNamespace !== undefined &&
    namespace === ownership.functionsNamespace &&
    carriesOwnerUid(metadata, ownership.owner.uid)
  );
}

/** Adds the managed-by label to an object the functions are about to create. */
export function markManaged<T extends { metadata?: V1ObjectMeta }>(object: T): T {
  return {
    ...object,
    metadata: {
      ...object.metadata,
      labels: { ...object.metadata?.labels, [managedByLabel]: managedByValue },
    },
  };
}

/**
 * Metadata of an object in the functions' namespace made for a Provisioning: no owner reference
 * (it cannot cross namespaces, and the garbage collector would delete a dependent whose owner it
 * does not find in the dependent's namespace), the labels deletion selects by, and the
 * Provisioning's namespace and name.
 */
export function functionsObjectMeta(
  owner: ProvisioningOwner,
  cluster: string,
  functionsNamespace: string,
  name: string,
): V1ObjectMeta {
  return {
    name,
    namespace: functionsNamespace,
    labels: {
      [clusterLabel]: cluster,
      [managedByLabel]: managedByValue,
      [provisioningUidLabel]: owner.uid,
    },
    annotations: {
      [provisioningNamespaceAnnotation]: owner.namespace,
      [provisioningNameAnnotation]: owner.name,
    },
  };
}

/** The Provisioning an object of the functions' namespace was made for, from its ties. */
export function provisioningOfFunctionsObject(
  metadata: V1ObjectMeta | undefined,
): { namespace: string; name: string; uid: string } | undefined {
  const namespace = metadata?.annotations?.[provisioningNamespaceAnnotation];
  const name = metadata?.annotations?.[provisioningNameAnnotation];
  const uid = metadata?.labels?.[provisioningUidLabel];
  if (metadata?.labels?.[managedByLabel] !== managedByValue || !namespace || !name || !uid) return undefined;
  return { namespace, name, uid };
}

/** `ObjectConflict` message: which object, and what to do about it. */
export function objectConflictMessage(
  kind: string,
  metadata: Pick<V1ObjectMeta, 'name' | 'namespace'>,
  owner: Pick<ProvisioningOwner, 'namespace' | 'name'>,
): string {
  return (
    `${kind} ${metadata.namespace}/${metadata.name} already exists and was not created by bpa-functions ` +
    `for Provisioning ${owner.namespace}/${owner.name}; it is left untouched (delete or rename it to proceed)`
  );
}

/**
 * undefined when `stored` may be written for the owner (absent, or ours by uid); else the
 * ObjectConflict message naming it.
 */
export function ownershipConflict(
  kind: string,
  stored: { metadata?: V1ObjectMeta } | undefined,
  ownership: Ownership,
): string | undefined {
  if (!stored || isOwned(kind, stored.metadata, ownership)) return undefined;
  return objectConflictMessage(
    kind,
    { name: stored.metadata?.name, namespace: stored.metadata?.namespace ?? ownership.owner.namespace },
    ownership.owner,
  );
}

/**
 * Seconds an object whose uid the owner's status does not record may still be a concurrent
 * delivery's own: a delivery creates it, then records its uid (two writes, never one), and another
 * delivery of the same step (a Job update and the sweep, two updates of one Job) can read it in
 * between. Within this time an unrecorded object is a transient wait, judged again on the
 * broker's retry (5 retries from 0.5 s, exponential: about 15 s) or the sweep; after it, a
 * look-alike. A tenant's look-alike is reported at most this much later, and never written.
 */
export const ownershipRecordingGraceSeconds = 10;

/** The reason of that transient wait (written Unknown, re-driven like every transient fault). */
export const ownershipPendingReason = 'OwnershipPending';

/**
 * undefined when `stored` may be written for the owner (absent, or ours by uid); a transient
 * `OwnershipPending` while it is younger than the recording grace; else `ObjectConflict`.
 */
export function ownershipError(
  kind: string,
  stored: { metadata?: V1ObjectMeta } | undefined,
  ownership: Ownership,
  now: Date = new Date(),
): BpaError | undefined {
  const conflict = ownershipConflict(kind, stored, ownership);
  if (!conflict) return undefined;
  const created = stored?.metadata?.creationTimestamp;
  const ageSeconds = created ? (now.getTime() - new Date(created).getTime()) / 1000 : Infinity;
  if (ageSeconds < ownershipRecordingGraceSeconds) {
    const { namespace = ownership.owner.namespace, name } = stored?.metadata ?? {};
    return transient(
      ownershipPendingReason,
      `${kind} ${namespace}/${name} was created ${Math.max(0, Math.round(ageSeconds))} s ago and its uid is not ` +
        `recorded in the status of Provisioning ${ownership.owner.namespace}/${ownership.owner.name} yet ` +
        `(a concurrent delivery records it); judged again on a retry`,
    );
  }
  return new BpaError(Reason.ObjectConflict, conflict);
}
