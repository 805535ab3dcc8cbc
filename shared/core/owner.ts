import type { V1OwnerReference } from '@kubernetes/client-node';
import { provisioningApiVersion, provisioningKind } from '../schemas/provisioning.js';

/** The Provisioning that owns the derived objects: where they live and who owns them. */
export interface ProvisioningOwner {
  name: string;
  namespace: string;
  /** The Provisioning's metadata.uid (owner references need it). */
  uid: string;
}

/** Controller owner reference: deleting the Provisioning deletes what was made for it. */
export function provisioningOwnerReference(owner: ProvisioningOwner): V1OwnerReference {
  return {
    apiVersion: provisioningApiVersion,
    kind: provisioningKind,
    name: owner.name,
    uid: owner.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}
