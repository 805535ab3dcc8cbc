import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import {
  claimedHostsField,
  claimedHostsOf,
  consumerRefFor,
  judgeHostClaim,
  judgePodClaim,
  podConsumerAnnotation,
  podConsumerValue,
  splitKey,
  type ClaimHolder,
  type ClaimOwner,
  type ClaimVerdict,
  type ClaimedHost,
} from '../core/host-claim.js';
import { hostImageAnnotation } from '../core/host-image.js';
import { BpaError, describeError, transient } from '../errors.js';
import type { Logger } from '../log.js';
import { consumerRefSchema, type ConsumerRef } from '../schemas/bare-metal-host.js';
import { classifyApiError, isConflict, isNotFound, readOrUndefined } from './api-errors.js';
import type { KubeClients } from './clients.js';
import { getCustomObject } from './custom-objects.js';
import { readProvisioning } from './provisioning.js';
import { bareMetalHostsResource, virtualMachineInstancesResource, type CustomResource } from './resources.js';
import type { StoredObject } from './stored-object.js';

/**
 * Host claims in the API (ADR 0013 point 3; the decisions are in shared/core/host-claim.ts):
 * a BareMetalHost's `spec.consumerRef`, a VM's (Virtlet pod, KubeVirt VirtualMachineInstance)
 * `bpa.akraino.org/consumer` annotation. Every write is a merge patch carrying the resourceVersion the decision was made
 * on, so two Provisionings racing for one host cannot both win: the loser's patch fails with 409
 * and it reads the host again and decides again. A claim costs one PATCH per host when the
 * caller's copy (host-lookup's watched index) is current, and nothing when the host is already
 * its own; a release costs a GET and a PATCH.
 */

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
/** Metal3's controller writes hosts often: read and decide again this many times on 409. */
const conflictAttempts = 4;

/** What the caller knows of the object: from an index or a list, maybe stale (409 tells). */
export interface KnownClaim {
  resourceVersion?: string;
  /** consumerRef (BareMetalHost) or the annotation's value (Pod). */
  consumer?: ConsumerRef | string;
}

export type ClaimResult =
  /** `written`: this call wrote the claim (roll it back if the Provisioning's other hosts fail). */
  { kind: 'mine'; written: boolean; object?: unknown } | { kind: 'taken'; holder: ClaimHolder };

/** A BareMetalHost or a VM pod, by `<namespace>/<name>`. */
interface ClaimTarget {
  what: string;
  read(): Promise<
    { resourceVersion?: string; consumer?: ConsumerRef | string; object: StoredObject } | undefined
  >;
  judge(consumer: ConsumerRef | string | undefined, owner: ClaimOwner): ClaimVerdict;
  claimPatch(resourceVersion: string, owner: ClaimOwner): object;
  releasePatch(live: StoredObject): object;
  patch(body: object): Promise<unknown>;
}

function bareMetalHostTarget(clients: KubeClients, key: string): ClaimTarget {
  const { namespace, name } = splitKey(key);
  return {
    what: `BareMetalHost ${key}`,
    async read() {
      const object = await getCustomObject(clients, { resource: bareMetalHostsResource, namespace, name });
      if (!object) return undefined;
      const spec = (object as { spec?: { consumerRef?: unknown } }).spec;
      const ref = consumerRefSchema.safeParse(spec?.consumerRef ?? {});
      // A consumerRef this schema cannot read is still "in use" (Metal3: not empty).
      const consumer = ref.success ? ref.data : { name: String(JSON.stringify(spec?.consumerRef)) };
      return { resourceVersion: object.metadata.resourceVersion, consumer, object };
    },
    judge: (consumer, owner) =>
      judgeHostClaim(typeof consumer === 'string' ? { name: consumer } : consumer, owner),
    // consumerRef whole: fields an earlier consumer set (fieldPath, resourceVersion) are removed.
    claimPatch: (resourceVersion, owner) => ({
      metadata: { resourceVersion },
      spec: { consumerRef: { ...consumerRefFor(owner), fieldPath: null, resourceVersion: null } },
    }),
    // spec.image goes only when bpa-functions wrote it (its annotation): someone else's stays.
    releasePatch: (live) => {
      const ours = live.metadata.annotations?.[hostImageAnnotation] !== undefined;
      return {
        metadata: {
          resourceVersion: live.metadata.resourceVersion,
          ...(ours ? { annotations: { [hostImageAnnotation]: null } } : {}),
        },
        spec: { consumerRef: null, ...(ours ? { image: null } : {}) },
      };
    },
    patch: (body) =>
      clients.custom.patchNamespacedCustomObject(
        { ...bareMetalHostsResource, namespace, name, body },
        mergePatch,
      ),
  };
}

/** The annotation claim of a VM: a Virtlet pod and a KubeVirt VMI are claimed alike. */
const annotationClaim = {
  judge: (consumer: ConsumerRef | string | undefined, owner: ClaimOwner) =>
    judgePodClaim(typeof consumer === 'string' ? consumer : undefined, owner),
  claimPatch: (resourceVersion: string, owner: ClaimOwner) => ({
    metadata: { resourceVersion, annotations: { [podConsumerAnnotation]: podConsumerValue(owner) } },
  }),
  releasePatch: (live: StoredObject) => ({
    metadata: {
      resourceVersion: live.metadata.resourceVersion,
      annotations: { [podConsumerAnnotation]: null },
    },
  }),
};

/** A custom resource claimed by annotation (KubeVirt's VirtualMachineInstance). */
function annotatedCustomTarget(
  clients: KubeClients,
  resource: CustomResource,
  what: string,
  key: string,
): ClaimTarget {
  const { namespace, name } = splitKey(key);
  return {
    what: `${what} ${key}`,
    async read() {
      const object = await getCustomObject(clients, { resource, namespace, name });
      if (!object) return undefined;
      return {
        resourceVersion: object.metadata.resourceVersion,
        consumer: object.metadata.annotations?.[podConsumerAnnotation],
        object,
      };
    },
    ...annotationClaim,
    patch: (body) =>
      clients.custom.patchNamespacedCustomObject({ ...resource, namespace, name, body }, mergePatch),
  };
}

const vmiTarget = (clients: KubeClients, key: string) =>
  annotatedCustomTarget(clients, virtualMachineInstancesResource, 'VirtualMachineInstance', key);

function podTarget(clients: KubeClients, key: string): ClaimTarget {
  const { namespace, name } = splitKey(key);
  return {
    what: `VM pod ${key}`,
    async read() {
      const pod = await readOrUndefined(`read pod ${key}`, () =>
        clients.core.readNamespacedPod({ namespace, name }),
      );
      if (!pod) return undefined;
      const object = pod as unknown as StoredObject;
      return {
        resourceVersion: pod.metadata?.resourceVersion,
        consumer: pod.metadata?.annotations?.[podConsumerAnnotation],
        object,
      };
    },
    ...annotationClaim,
    patch: (body) => clients.core.patchNamespacedPod({ namespace, name, body }, mergePatch),
  };
}

/**
 * Is the Provisioning that holds a host gone (deleted without releasing it, e.g. its finalizer
 * removed by hand), or another object of that name now? Then its claim is abandoned and may be
 * taken, with the host's resourceVersion as precondition like any claim.
 */
export async function holderIsGone(clients: KubeClients, holder: ClaimHolder): Promise<boolean> {
  if (!holder.provisioning || !holder.namespace || !holder.name) return false;
  const live = await readProvisioning(clients, holder.namespace, holder.name);
  if (!live) return true;
  return holder.provisioning.uid !== undefined && live.metadata.uid !== holder.provisioning.uid;
}

/** Judges `known` (or a fresh read) and writes the claim; on 409 reads again and decides again. */
async function claim(
  clients: KubeClients,
  target: ClaimTarget,
  known: KnownClaim | undefined,
  owner: ClaimOwner,
): Promise<ClaimResult> {
  let current: KnownClaim | undefined = known;
  for (let attempt = 1; attempt <= conflictAttempts; attempt++) {
    if (!current || current.resourceVersion === undefined) {
      current = await target.read();
      if (!current) throw gone(target.what);
    }
    const verdict = target.judge(current.consumer, owner);
    if (verdict.kind === 'mine') return { kind: 'mine', written: false };
    if (verdict.kind === 'taken' && !(await holderIsGone(clients, verdict.holder))) return verdict;
    try {
      const object = await target.patch(target.claimPatch(current.resourceVersion!, owner));
      return { kind: 'mine', written: true, object };
    } catch (error) {
      if (isNotFound(error)) throw gone(target.what);
      if (!isConflict(error)) throw classifyApiError(error, `claim ${target.what}`);
      current = undefined; // Someone wrote the host since: read it and decide again.
    }
  }
  throw transient('HostClaimConflict', `The claim of ${target.what} kept conflicting; it is tried again`);
}

export type ReleaseResult = 'released' | 'not-mine' | 'gone';

/** Removes `owner`'s claim (and, on a BareMetalHost, the image bpa-functions wrote). */
async function release(target: ClaimTarget, owner: ClaimOwner): Promise<ReleaseResult> {
  for (let attempt = 1; attempt <= conflictAttempts; attempt++) {
    const current = await target.read();
    if (!current) return 'gone';
    if (target.judge(current.consumer, owner).kind !== 'mine') return 'not-mine';
    try {
      await target.patch(target.releasePatch(current.object));
      return 'released';
    } catch (error) {
      if (isNotFound(error)) return 'gone';
      if (!isConflict(error)) throw classifyApiError(error, `release ${target.what}`);
    }
  }
  throw transient('HostClaimConflict', `The release of ${target.what} kept conflicting; it is tried again`);
}

// The host was resolved a moment ago: a deletion since is retried (Unknown), and the next
// resolution no longer finds it.
const gone = (what: string) => transient('HostGone', `${what} was deleted while it was being claimed`);

export const claimBareMetalHost = (
  clients: KubeClients,
  key: string,
  known: KnownClaim | undefined,
  owner: ClaimOwner,
) => claim(clients, bareMetalHostTarget(clients, key), known, owner);

export const claimVmPod = (
  clients: KubeClients,
  key: string,
  known: KnownClaim | undefined,
  owner: ClaimOwner,
) => claim(clients, podTarget(clients, key), known, owner);

export const claimVmi = (
  clients: KubeClients,
  key: string,
  known: KnownClaim | undefined,
  owner: ClaimOwner,
) => claim(clients, vmiTarget(clients, key), known, owner);

export function releaseHost(
  clients: KubeClients,
  host: ClaimedHost,
  owner: ClaimOwner,
): Promise<ReleaseResult> {
  const key = `${host.namespace}/${host.name}`;
  const target =
    host.kind === 'Pod'
      ? podTarget(clients, key)
      : host.kind === 'VirtualMachineInstance'
        ? vmiTarget(clients, key)
        : bareMetalHostTarget(clients, key);
  return release(target, owner);
}

/** The owner a stored Provisioning claims as. */
export const claimOwnerOf = (live: StoredObject): ClaimOwner => ({
  namespace: live.metadata.namespace ?? '',
  name: live.metadata.name,
  uid: live.metadata.uid ?? '',
});

/**
 * Releases every host a Provisioning's status records as claimed (`status.claimedHosts`): the
 * deletion's last step, after cleanup (kud-job-launch); or, with `retainedHosts`, those whose nodes
 * left the spec, once a KUD Job for the new spec has succeeded. A host that is gone or held by someone
 * else is left alone. A release the API refuses (403: no right in that namespace) is logged and
 * skipped: a deletion never hangs on it, and the claim of a Provisioning that is gone is taken
 * over by the next one (holderIsGone). Transient faults throw: the step is retried.
 */
export async function releaseHosts(
  clients: KubeClients,
  live: StoredObject,
  log?: Logger,
  /** `claimedHosts`, or `retainedHosts` (shared/core/host-claim.ts). */
  field: string = claimedHostsField,
): Promise<void> {
  const owner = claimOwnerOf(live);
  for (const host of claimedHostsOf(live.status, field)) {
    try {
      const outcome = await releaseHost(clients, host, owner);
      log?.info('host released', { host: `${host.namespace}/${host.name}`, kind: host.kind, outcome });
    } catch (error) {
      if (error instanceof BpaError && error.kind === 'transient') throw error;
      log?.warn('host could not be released; its claim is taken over once this Provisioning is gone', {
        host: `${host.namespace}/${host.name}`,
        ...describeError(error),
      });
    }
  }
}
