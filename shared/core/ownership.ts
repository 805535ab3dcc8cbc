import type { V1ObjectMeta } from '@kubernetes/client-node';
import { managedByLabel, managedByValue } from './names.js';
import type { ProvisioningOwner } from './owner.js';

/**
 * Never adopt (contract section 10): the functions create, update and delete only objects they
 * created, i.e. labelled `app.kubernetes.io/managed-by=bpa-functions` AND controlled (controller
 * owner reference) by the same Provisioning (same uid). Either alone is not enough: a tenant can
 * set the label, and an owner reference alone may be a user's own object.
 */
export function isOwnedBy(
  metadata: V1ObjectMeta | undefined,
  owner: Pick<ProvisioningOwner, 'uid'>,
): boolean {
  if (metadata?.labels?.[managedByLabel] !== managedByValue) return false;
  return (metadata.ownerReferences ?? []).some(
    (ref) =>
      ref.controller === true &&
      ref.uid === owner.uid &&
      ref.kind === 'Provisioning' &&
      ref.apiVersion.startsWith('bpa.akraino.org/'),
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
 * undefined when `stored` may be written for `owner` (absent, or ours); else the ObjectConflict
 * message naming it.
 */
export function ownershipConflict(
  kind: string,
  stored: { metadata?: V1ObjectMeta } | undefined,
  owner: ProvisioningOwner,
): string | undefined {
  if (!stored || isOwnedBy(stored.metadata, owner)) return undefined;
  return objectConflictMessage(
    kind,
    { name: stored.metadata?.name, namespace: stored.metadata?.namespace ?? owner.namespace },
    owner,
  );
}
