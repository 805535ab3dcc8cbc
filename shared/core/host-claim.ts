import { z } from 'zod';
import type { ConsumerRef } from '../schemas/bare-metal-host.js';
import { provisioningApiVersion, provisioningKind } from '../schemas/provisioning.js';

/**
 * One owner per host (contract section 12, ADR 0013 point 3): a BareMetalHost serves one
 * Provisioning at a time, the Metal3 way. Its `spec.consumerRef` names the Provisioning that uses
 * it, as Cluster API's Metal3Machine does; a VM (a Virtlet VM pod, a KubeVirt
 * VirtualMachineInstance) carries the annotation
 * `bpa.akraino.org/consumer: <namespace>/<name>/<uid>` instead. These are the pure decisions;
 * shared/k8s/host-claims.ts writes them with the object's resourceVersion as precondition.
 */

/** The Provisioning that claims (or holds) a host. */
export interface ClaimOwner {
  namespace: string;
  name: string;
  uid: string;
}

/** Who holds a host: a Provisioning, or anything else that set consumerRef (a Metal3Machine...). */
export interface ClaimHolder {
  namespace: string;
  name: string;
  /** Set when the holder is a Provisioning of this project: it may have gone without releasing. */
  provisioning?: { uid?: string };
}

export type ClaimVerdict =
  /** Nobody uses the host. */
  | { kind: 'free' }
  /** This Provisioning holds it already. */
  | { kind: 'mine' }
  /** Someone else: the claim stands unless the holder is a Provisioning that is gone. */
  | { kind: 'taken'; holder: ClaimHolder };

/** Annotation of a VM (Virtlet pod or KubeVirt VMI) claimed by a Provisioning: `<namespace>/<name>/<uid>`. */
export const podConsumerAnnotation = 'bpa.akraino.org/consumer';

/** The consumerRef this project writes: Metal3's schema keeps apiVersion, kind, namespace, name, uid. */
export function consumerRefFor(owner: ClaimOwner): Required<ConsumerRef> {
  return {
    apiVersion: provisioningApiVersion,
    kind: provisioningKind,
    namespace: owner.namespace,
    name: owner.name,
    uid: owner.uid,
  };
}

const isProvisioningRef = (ref: ConsumerRef) =>
  ref.kind === provisioningKind &&
  (ref.apiVersion ?? '').split('/')[0] === provisioningApiVersion.split('/')[0];

/**
 * What a host's consumerRef means for `owner`. Metal3: "when it is not empty, the host is
 * considered in use", so any ref with a name (or any other field) that is not this
 * Provisioning is taken. The same namespace and name with another uid is an earlier
 * Provisioning of that name (deleted and created again): taken by it until it is found gone.
 */
export function judgeHostClaim(ref: ConsumerRef | null | undefined, owner: ClaimOwner): ClaimVerdict {
  if (!ref || Object.values(ref).every((value) => value === undefined || value === ''))
    return { kind: 'free' };
  const namespace = ref.namespace ?? '';
  const name = ref.name ?? '';
  if (!isProvisioningRef(ref)) return { kind: 'taken', holder: { namespace, name } };
  if (
    namespace === owner.namespace &&
    name === owner.name &&
    (ref.uid === undefined || ref.uid === owner.uid)
  )
    return { kind: 'mine' };
  return { kind: 'taken', holder: { namespace, name, provisioning: { uid: ref.uid } } };
}

/** The pod annotation's value for `owner`. */
export const podConsumerValue = (owner: ClaimOwner) => `${owner.namespace}/${owner.name}/${owner.uid}`;

/** What a VM's `bpa.akraino.org/consumer` annotation means for `owner` (as judgeHostClaim). */
export function judgePodClaim(value: string | undefined, owner: ClaimOwner): ClaimVerdict {
  if (value === undefined || value.trim() === '') return { kind: 'free' };
  const parts = value.split('/');
  if (parts.length !== 3 || parts.some((part) => part === ''))
    // Not ours to read: someone marked the pod in use.
    return { kind: 'taken', holder: { namespace: '', name: value } };
  const [namespace = '', name = '', uid = ''] = parts;
  if (namespace === owner.namespace && name === owner.name && uid === owner.uid) return { kind: 'mine' };
  return { kind: 'taken', holder: { namespace, name, provisioning: { uid } } };
}

/** `<namespace>/<name>` of a holder (just the name when it has no namespace). */
export const holderName = (holder: ClaimHolder) =>
  holder.namespace ? `${holder.namespace}/${holder.name}` : holder.name;

/** The message of HostsResolved=False, reason HostInUse (contract section 12, exact). */
export function hostInUseMessage(
  what: 'Host' | 'VM',
  host: string,
  mac: string,
  holder: ClaimHolder,
): string {
  return `${what} ${host} (MAC ${mac}) is already used by ${holderName(holder)}`;
}

/**
 * `status.claimedHosts` of a Provisioning: the hosts it holds, written with status.nodes, so
 * that kud-job-launch can release them on deletion without listing every host.
 */
export const claimedHostSchema = z.object({
  kind: z.enum(['BareMetalHost', 'Pod', 'VirtualMachineInstance']),
  namespace: z.string().min(1),
  name: z.string().min(1),
});
export type ClaimedHost = z.infer<typeof claimedHostSchema>;
export const claimedHostsField = 'claimedHosts';

/**
 * `status.retainedHosts`: hosts still claimed (and in status.claimedHosts) whose nodes have left
 * the spec of a cluster that KUD has installed or is installing: the node may still be a member
 * (an etcd member, even, when a master's removal is refused), so host-lookup keeps the claim and
 * kud-job-launch releases these hosts once a KUD Job for the new spec has succeeded (after
 * remove-node.yml, contract section 14). Never handed to another Provisioning before that.
 */
export const retainedHostsField = 'retainedHosts';

/** The claimed hosts a status records; anything malformed is dropped (release is best effort). */
export function claimedHostsOf(status: unknown, field: string = claimedHostsField): ClaimedHost[] {
  const list = (status as Record<string, unknown> | undefined)?.[field];
  if (!Array.isArray(list)) return [];
  return list.flatMap((item) => {
    const parsed = claimedHostSchema.safeParse(item);
    return parsed.success ? [parsed.data] : [];
  });
}

/** `<namespace>/<name>` to {namespace, name}. */
export function splitKey(key: string): { namespace: string; name: string } {
  const slash = key.indexOf('/');
  return slash === -1
    ? { namespace: '', name: key }
    : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
