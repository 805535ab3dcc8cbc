import type { ResourceRef } from '../events/types.js';

/** A namespaced object as the API server returns it: what every helper here relies on. */
export interface StoredObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    generation?: number;
    resourceVersion?: string;
    creationTimestamp?: string | Date;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: Array<{
      apiVersion: string;
      kind: string;
      name: string;
      uid: string;
      controller?: boolean;
    }>;
    [key: string]: unknown;
  };
  spec?: unknown;
  status?: Record<string, unknown>;
  [key: string]: unknown;
}

/** The ResourceRef chain events carry for this generation of an object (Provisioning, Software). */
export function resourceRefOf(object: StoredObject): ResourceRef {
  return {
    namespace: object.metadata.namespace ?? 'default',
    name: object.metadata.name,
    uid: object.metadata.uid ?? '',
    generation: object.metadata.generation ?? 0,
  };
}

/** The identity every Event and owner reference needs. */
export interface ObjectIdentity {
  apiVersion: string;
  kind: string;
  name: string;
  namespace: string;
  uid: string;
}

export function identityOf(object: StoredObject): ObjectIdentity {
  return {
    apiVersion: object.apiVersion ?? '',
    kind: object.kind ?? '',
    name: object.metadata.name,
    namespace: object.metadata.namespace ?? '',
    uid: object.metadata.uid ?? '',
  };
}

/** A controller owner reference, so the owned object is garbage collected with its owner. */
export function controllerReference(owner: ObjectIdentity) {
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.name,
    uid: owner.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** metadata.creationTimestamp as a Date (client-node turns it into one for typed objects only). */
export function creationTimeOf(object: StoredObject): Date | undefined {
  const value = object.metadata.creationTimestamp;
  if (!value) return undefined;
  const date = value instanceof Date ? value : new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date;
}
