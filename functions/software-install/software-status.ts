import { functionManager, functionName } from './name.js';
import type { CloudEvent } from 'cloudevents';
import { z } from 'zod';
import { chainEvent } from '../../shared/cloudevents/chain-event.js';
import { EventTypes, softwareSubject, type HostResult, type ResourceRef } from '../../shared/events/types.js';
import type { Logger } from '../../shared/log.js';
import { Reason } from '../../shared/reasons.js';
import { provisioningApiVersion } from '../../shared/schemas/provisioning.js';
import { softwareKind } from '../../shared/schemas/software.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { completeStep, reportFailure, type Failure } from '../../shared/k8s/step-report.js';
import { softwaresResource } from '../../shared/k8s/resources.js';
import type { StatusTarget } from '../../shared/k8s/custom-objects.js';
import { resourceRefOf, type ObjectIdentity, type StoredObject } from '../../shared/k8s/stored-object.js';

/** Software condition types (contract section 8). */
export const SoftwareCondition = { installed: 'Installed', ready: 'Ready' } as const;

export const softwareTarget = (namespace: string, name: string): StatusTarget => ({
  resource: softwaresResource,
  namespace,
  name,
});

/** The ResourceRef software events carry for this generation of a Software. */
export const softwareRef = resourceRefOf;

export const softwareIdentity = (ref: ResourceRef): ObjectIdentity => ({
  apiVersion: provisioningApiVersion,
  kind: softwareKind,
  name: ref.name,
  namespace: ref.namespace,
  uid: ref.uid,
});

/**
 * Who is installing which generation, until when: written together with Installed=Unknown
 * (Installing) under a resourceVersion precondition. A claim past its expiry belongs to a
 * process that died mid-install; the sweep takes it over.
 */
export const installClaimSchema = z.object({
  generation: z.number().int(),
  holder: z.string(),
  expiresAt: z.string(),
});
export type InstallClaim = z.infer<typeof installClaimSchema>;

export function activeClaim(
  object: StoredObject,
  generation: number,
  now = new Date(),
): InstallClaim | undefined {
  const claim = installClaimSchema.safeParse(object.status?.claim);
  if (!claim.success || claim.data.generation !== generation) return undefined;
  return new Date(claim.data.expiresAt).getTime() > now.getTime() ? claim.data : undefined;
}

/** A per-host result as status keeps it: the event's fields plus the trusted host key. */
/** A host's result as status records it: what events carry, the accepted key, the session's connect time. */
export type HostStatus = HostResult & { hostKeyFingerprint?: string; connectMs?: number };

/**
 * Records a failed install (Installed + Ready False, Warning Event) and returns the
 * `software.failed` event, or undefined when exactly this failure was already recorded.
 * `manager`: the writer's field manager, the function's or its install Job's (name.ts).
 */
export async function failSoftware(
  clients: KubeClients,
  object: StoredObject,
  failure: Omit<Failure, 'step'>,
  log: Logger,
  hosts?: HostStatus[],
  fields: Record<string, unknown> = {},
  manager: string = functionManager,
): Promise<CloudEvent<unknown> | undefined> {
  const ref = softwareRef(object);
  const result = await reportFailure(
    clients,
    {
      ...failure,
      step: SoftwareCondition.installed,
      target: softwareTarget(ref.namespace, ref.name),
      object: softwareIdentity(ref),
      ref,
      component: functionName,
      manager,
      fields: { claim: undefined, ...(hosts ? { hosts } : {}), ...fields },
    },
    log,
  );
  log.warn('software install failed', { reason: failure.reason, outcome: result.outcome });
  if (result.outcome !== 'written') return undefined;
  const cluster = object.metadata.labels?.cluster ?? '';
  return chainEvent(
    EventTypes.softwareFailed,
    functionName,
    softwareSubject(ref.namespace, ref.name),
    { software: ref, cluster, ...failure, ...(hosts ? { hosts: hosts.map(eventHost) } : {}) },
    { cluster },
  );
}

/**
 * Records a finished install (Installed + Ready True, the per-host results, the claim released,
 * a Normal Event) and returns the `software.installed` event, or undefined when the Software
 * moved on or is gone.
 */
export async function completeSoftware(
  clients: KubeClients,
  object: StoredObject,
  message: string,
  hosts: HostStatus[],
  log: Logger,
  fields: Record<string, unknown> = {},
): Promise<CloudEvent<unknown> | undefined> {
  const ref = softwareRef(object);
  const result = await completeStep(
    clients,
    {
      step: SoftwareCondition.installed,
      reason: Reason.Installed,
      message,
      ready: { status: 'True', reason: Reason.Installed, message },
      // This generation is claimed by the caller: nobody else records its outcome.
      alreadyDone: () => false,
      target: softwareTarget(ref.namespace, ref.name),
      object: softwareIdentity(ref),
      ref,
      component: functionName,
      manager: functionManager,
      fields: { ...fields, hosts, claim: undefined },
    },
    log,
  );
  if (result.outcome !== 'written') return undefined;
  const cluster = object.metadata.labels?.cluster ?? '';
  return chainEvent(
    EventTypes.softwareInstalled,
    functionName,
    softwareSubject(ref.namespace, ref.name),
    { software: ref, cluster, hosts: hosts.map(eventHost) },
    { cluster },
  );
}

/** The event carries the contract's per-host fields only. */
export function eventHost(host: HostStatus): HostResult {
  const { hostKeyFingerprint: _fingerprint, connectMs: _connect, ...result } = host;
  return result;
}
