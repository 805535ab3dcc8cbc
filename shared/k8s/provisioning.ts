import type { CloudEvent } from 'cloudevents';
import { chainEvent, writtenVersionOf, type ChainEventData } from '../cloudevents/chain-event.js';
import { EventTypes, provisioningSubject, type ChainEventType, type ResourceRef } from '../events/types.js';
import type { Logger } from '../log.js';
import { provisioningApiVersion, provisioningKind } from '../schemas/provisioning.js';
import type { KubeClients } from './clients.js';
import { completeStep, reportFailure, type Failure, type StepTarget, type Success } from './step-report.js';
import { provisioningsResource } from './resources.js';
import { getCustomObject } from './custom-objects.js';
import { recordedBy, replyIdFor } from './step-causes.js';
import type { StatusTarget } from './custom-objects.js';
import { resourceRefOf, type ObjectIdentity, type StoredObject } from './stored-object.js';

/** Provisioning condition types (contract section 8). */
export const ProvisioningCondition = {
  hostsResolved: 'HostsResolved',
  inventoryRendered: 'InventoryRendered',
  jobLaunched: 'JobLaunched',
  kudInstalled: 'KudInstalled',
  ready: 'Ready',
  /** After KudInstalled: the new cluster's admin.conf is in `<cluster>-admin-kubeconfig`. */
  kubeconfigPublished: 'KubeconfigPublished',
} as const;

export const provisioningTarget = (namespace: string, name: string): StatusTarget => ({
  resource: provisioningsResource,
  namespace,
  name,
});

/** What a chain event points at: this generation of this Provisioning (define-step.ts). */
/**
 * What a chain event about a Provisioning points at: the generation, and the version the sender
 * wrote when the event names one (its `resourceversion` extension: the prologue may take exactly
 * that version from its watch; define-step.ts).
 */
export const provisioningPointer = (ref: ResourceRef, event?: CloudEvent<unknown>) => {
  const resourceVersion = event ? writtenVersionOf(event) : undefined;
  return {
    target: provisioningTarget(ref.namespace, ref.name),
    ref,
    ...(resourceVersion ? { shown: { uid: ref.uid, resourceVersion } } : {}),
  };
};

export const readProvisioning = (clients: KubeClients, namespace: string, name: string) =>
  getCustomObject(clients, provisioningTarget(namespace, name));

/** The ResourceRef chain events carry for this generation of a Provisioning. */
export const provisioningRef = resourceRefOf;

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
 * `apply`: `object` is the live object the step read, and the function's status fields are all
 * written by apply: the ending is a server-side apply on it (step-report.ts StepTarget.live).
 */
export interface WriteOptions {
  apply?: boolean;
  /**
   * A failure only: other status fields written with it (host-lookup's first handling records the
   * labels it acted on with its ending). A success names its fields itself.
   */
  fields?: Record<string, unknown>;
}

/** Where a step of this Provisioning's generation ends, reported by `functionName` (both endings). */
function stepTarget(
  object: StoredObject,
  functionName: string,
  options: WriteOptions,
): StepTarget & { ref: ResourceRef } {
  const ref = provisioningRef(object);
  return {
    target: provisioningTarget(ref.namespace, ref.name),
    object: provisioningIdentity(ref),
    ref,
    component: functionName,
    ...(options.apply ? { live: object } : {}),
  };
}

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
  options: WriteOptions = {},
): Promise<CloudEvent<unknown> | undefined> {
  const where = stepTarget(object, functionName, options);
  const { ref } = where;
  const fields = options.fields;
  const result = await reportFailure(clients, { ...failure, ...where, ...(fields ? { fields } : {}) }, log);
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

/** A Provisioning step's success and the chain event that announces it. */
export interface ProvisioningSuccess<T extends ChainEventType> extends Success {
  /** Other status fields to write with the conditions (nodes, jobName...), or a function of the fresh object. */
  fields?: Record<string, unknown> | ((fresh: StoredObject) => Record<string, unknown>);
  /** The event to reply with; built only when this call recorded the success. */
  announce: { type: T; cluster: string; data: ChainEventData<T> };
}

/**
 * The success twin of `failProvisioning`: the step True, `Ready` as given, a Normal Event, and
 * the chain event to reply with, or undefined when the success was already recorded for this
 * generation by another event, or the Provisioning moved on (stale) or is gone. The same cause
 * delivered again (a retry racing the delivery that timed out) gets the same reply, same id.
 */
export async function completeProvisioningStep<T extends ChainEventType>(
  clients: KubeClients,
  functionName: string,
  object: StoredObject,
  success: ProvisioningSuccess<T>,
  log?: Logger,
  options: WriteOptions = {},
): Promise<CloudEvent<unknown> | undefined> {
  const where = stepTarget(object, functionName, options);
  const { ref } = where;
  const { announce, ...step } = success;
  const result = await completeStep(clients, { ...step, ...where }, log);
  const again = result.outcome === 'already-done' && recordedBy(result.object.status, step.step, step.cause);
  if (result.outcome !== 'written' && !again) return undefined;
  if (again) log?.info('step already done by this same event: its reply is sent again', { step: step.step });
  const id = replyIdFor(step.step, step.cause);
  return chainEvent(
    announce.type,
    functionName,
    provisioningSubject(ref.namespace, ref.name),
    announce.data,
    {
      cluster: announce.cluster,
      ...(id ? { id } : {}),
      // The version the step's write stored, so the next step can take it from its watch instead
      // of reading it (a reply sent again names none, and is read).
      ...(result.outcome === 'written' && result.object.metadata.resourceVersion
        ? { resourceVersion: result.object.metadata.resourceVersion }
        : {}),
    },
  );
}
