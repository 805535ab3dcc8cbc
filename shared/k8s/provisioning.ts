import type { CloudEvent } from 'cloudevents';
import { chainEvent } from '../cloudevents/chain-event.js';
import { EventTypes, provisioningSubject, type ResourceRef } from '../events/types.js';
import type { Logger } from '../log.js';
import { provisioningApiVersion, provisioningKind } from '../schemas/provisioning.js';
import type { KubeClients } from './clients.js';
import { reportFailure, type Failure } from './failure-report.js';
import { provisioningsResource } from './resources.js';
import { getCustomObject } from './custom-objects.js';
import type { StatusTarget } from './status-writer.js';
import type { ObjectIdentity, StoredObject } from './stored-object.js';

/** Provisioning condition types (contract section 8). */
export const ProvisioningCondition = {
  hostsResolved: 'HostsResolved',
  inventoryRendered: 'InventoryRendered',
  jobLaunched: 'JobLaunched',
  kudInstalled: 'KudInstalled',
  ready: 'Ready',
} as const;

export const provisioningTarget = (namespace: string, name: string): StatusTarget => ({
  resource: provisioningsResource,
  namespace,
  name,
});

export const readProvisioning = (clients: KubeClients, namespace: string, name: string) =>
  getCustomObject(clients, provisioningTarget(namespace, name));

/** The ResourceRef chain events carry for this generation of a Provisioning. */
export function provisioningRef(object: StoredObject): ResourceRef {
  return {
    namespace: object.metadata.namespace ?? 'default',
    name: object.metadata.name,
    uid: object.metadata.uid ?? '',
    generation: object.metadata.generation ?? 0,
  };
}

export function provisioningIdentity(ref: ResourceRef): ObjectIdentity {
  return {
    apiVersion: provisioningApiVersion,
    kind: provisioningKind,
    name: ref.name,
    namespace: ref.namespace,
    uid: ref.uid,
  };
}

/** The cluster label of a stored Provisioning (may be missing on an invalid one). */
export const clusterOf = (object: StoredObject) => object.metadata.labels?.cluster ?? '';

/**
 * Records a failed step (condition False + Ready False + Warning Event) and returns the
 * `provisioning.failed` event to reply with, or undefined when that exact failure was already
 * recorded for this generation, or the Provisioning moved on (stale) or is gone.
 */
export async function failProvisioning(
  clients: KubeClients,
  functionName: string,
  object: StoredObject,
  failure: Failure,
  log?: Logger,
): Promise<CloudEvent<unknown> | undefined> {
  const ref = provisioningRef(object);
  const result = await reportFailure(
    clients,
    {
      ...failure,
      target: provisioningTarget(ref.namespace, ref.name),
      object: provisioningIdentity(ref),
      ref,
      component: functionName,
    },
    log,
  );
  log?.warn('provisioning step failed', {
    step: failure.step,
    reason: failure.reason,
    outcome: result.outcome,
  });
  if (result.outcome !== 'written') return undefined;
  const cluster = clusterOf(object);
  return chainEvent(
    EventTypes.provisioningFailed,
    functionName,
    provisioningSubject(ref.namespace, ref.name),
    { provisioning: ref, cluster, ...failure },
    { cluster },
  );
}
