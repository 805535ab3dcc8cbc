import { z } from 'zod';
import type { StoredObject } from './stored-object.js';

/**
 * Ownership by uid (docs/adr/0013-tenancy.md point 2): an object counts as the functions' own only
 * when its uid is the one recorded in the owner's `status.ownedObjects` when it was created.
 * Labels and owner references can be forged by anyone who may create that kind; a tenant cannot
 * make the API server hand out a uid it chose. Pure helpers; the writers live with their owners.
 */

export const ownedObjectSchema = z.object({
  kind: z.string().min(1),
  namespace: z.string(),
  name: z.string().min(1),
  uid: z.string().min(1),
});
export type OwnedObject = z.infer<typeof ownedObjectSchema>;

/** The owner's `status.ownedObjects`; malformed entries are not ownership. */
export function ownedObjectsOf(owner: Pick<StoredObject, 'status'>): OwnedObject[] {
  const list = owner.status?.ownedObjects;
  if (!Array.isArray(list)) return [];
  return list.flatMap((entry) => {
    const parsed = ownedObjectSchema.safeParse(entry);
    return parsed.success ? [parsed.data] : [];
  });
}

const sameObject = (a: Omit<OwnedObject, 'uid'>, b: Omit<OwnedObject, 'uid'>) =>
  a.kind === b.kind && a.namespace === b.namespace && a.name === b.name;

/** The uid recorded for that object, if any. */
export function recordedUid(
  owner: Pick<StoredObject, 'status'>,
  object: Omit<OwnedObject, 'uid'>,
): string | undefined {
  return ownedObjectsOf(owner).find((entry) => sameObject(entry, object))?.uid;
}

/** True when `uid` is the one the owner recorded for that object. */
export function isOwned(owner: Pick<StoredObject, 'status'>, object: OwnedObject): boolean {
  return recordedUid(owner, object) === object.uid;
}

/** The list with `object` recorded (replacing an older entry of the same kind, namespace and name). */
export function withOwned(list: readonly OwnedObject[], object: OwnedObject): OwnedObject[] {
  return [...list.filter((entry) => !sameObject(entry, object)), object];
}
