import type { CloudEvent } from 'cloudevents';
import { planNodes } from '../../shared/core/node-plan.js';
import {
  hostOfNode,
  resolveCluster,
  type ResolutionInput,
  type ResolvedCluster,
} from '../../shared/core/resolve.js';
import type { HostMacEntry } from '../../shared/core/host-index.js';
import { judgeHostProvisioning } from '../../shared/core/host-provisioning.js';
import { preflight } from '../../shared/core/preflight.js';
import { applyConditions } from '../../shared/k8s/condition-writer.js';
import { fieldManagerFor } from '../../shared/k8s/status-apply.js';
import { conditionFor } from '../../shared/k8s/conditions.js';
import {
  claimedHostsField,
  retainedHostsField,
  splitKey,
  type ClaimedHost,
} from '../../shared/core/host-claim.js';
import { clusterTypeOf, isVmCluster } from '../../shared/core/cluster-type.js';
import { claimOwnerOf } from '../../shared/k8s/host-claims.js';
import { BpaError } from '../../shared/errors.js';
import { EventTypes } from '../../shared/events/types.js';
import { Reason, errorReason, type StepReason } from '../../shared/reasons.js';
import { describeIssues } from '../../shared/schemas/issues.js';
import type { ResolvedNode } from '../../shared/schemas/node.js';
import { provisioningSchema } from '../../shared/schemas/provisioning.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import {
  ProvisioningCondition,
  completeProvisioningStep,
  failProvisioning,
  provisioningIdentity,
  provisioningRef,
  provisioningTarget,
} from '../../shared/k8s/provisioning.js';
import { recordEvent } from '../../shared/k8s/events.js';
import type { StepCause } from '../../shared/k8s/step-causes.js';
import { identityOf, type StoredObject } from '../../shared/k8s/stored-object.js';
import type { FunctionContext } from '../../shared/server/types.js';
import type { ClusterFacts } from './cluster-facts.js';
import type { HostLookupConfig } from './config.js';
import { applyHostImages, imageForHosts, type HostImageReport } from './host-images.js';
import { claimHosts, firstInUse, nodeHostOfEntry, releaseUnnamed, type NodeHost } from './claims.js';
import { claimCluster } from './lifecycle.js';
import { vmHostsOf } from './vm-hosts.js';
import { nodesResolved } from './metrics.js';

export type ResolveOutcome =
  /** Nodes resolved and recorded by this call (or by this cause's earlier delivery): reply/send this hosts.resolved. */
  | { kind: 'resolved'; event: CloudEvent<unknown> }
  /** Resolution failed; `event` (provisioning.failed) only when the failure was newly recorded. */
  | { kind: 'failed'; event?: CloudEvent<unknown> }
  /**
   * Hosts claimed (and given the image) but Metal3 has not provisioned them all yet (contract
   * section 13): HostsResolved=Unknown, WaitingForProvisioning; nothing is sent, the sweep looks again.
   */
  | { kind: 'waiting'; event?: undefined }
  /** Someone else recorded this generation meanwhile, or the Provisioning changed or is gone. */
  | { kind: 'skipped'; event?: undefined };

/**
 * Validates the live Provisioning, resolves its nodes and records the result on its status:
 * `status.nodes` + HostsResolved True, or HostsResolved/Ready False with the contract's message
 * and a Warning Event. An invalid resource is a False condition, not an HTTP error: the event
 * that named it was fine. `cause`: the event being answered (none from the sweep), recorded with
 * the success so its redelivery gets the same reply.
 *
 * Bare metal, in this order: the hosts by MAC (HostNotFound), one owner per host (HostInUse),
 * the preflight of the nodes' cpu/memory against the inspected hardware (contract section 14:
 * PreflightFailed, or waiting, untouched, for a host not inspected yet), the Image, the claims,
 * spec.image, then Metal3's verdict on every host (contract section 13):
 * waiting (HostsResolved Unknown, WaitingForProvisioning) until each is `provisioned` or
 * `externally provisioned`, HostProvisioningFailed in an error state; only then the IPs, read
 * from the hosts as they are after provisioning. VMs (Virtlet pods, KubeVirt VMIs) are not Metal3
 * hosts: their IPs are resolved before the claim, and nothing is waited for.
 */
export async function resolveProvisioning(
  context: FunctionContext<HostLookupConfig>,
  clients: KubeClients,
  facts: ClusterFacts,
  read: StoredObject,
  cause?: StepCause,
  /** Status fields written with whatever ending this handling has (its first: the labels). */
  handling: Record<string, unknown> = {},
): Promise<ResolveOutcome> {
  // The Provisioning as last read or written by this handling: the base of the status apply.
  let live = read;
  const step = ProvisioningCondition.hostsResolved;
  /** HostsResolved/Ready False with the reason, a Warning Event (once), the failed outcome. */
  const fail = async (reason: StepReason, message: string): Promise<ResolveOutcome> => ({
    kind: 'failed',
    event: await failProvisioning(
      clients,
      context.functionName,
      live,
      { step, reason, message },
      context.log,
      { apply: true, fields: handling },
    ),
  });
  const parsed = provisioningSchema.safeParse(live);
  if (!parsed.success) {
    const { namespace, name } = live.metadata;
    return fail(
      Reason.InvalidProvisioning,
      `Provisioning ${namespace}/${name} is invalid: ${describeIssues(parsed.error)}`,
    );
  }
  const provisioning = parsed.data;
  // The spec's own rules come before the claim, so an invalid Provisioning never holds a cluster
  // name that a valid one then cannot have.
  try {
    planNodes(provisioning.spec);
  } catch (error) {
    if (!(error instanceof BpaError) || error.kind !== 'invalid') throw error;
    return fail(errorReason(error), error.message);
  }
  const clusterType = clusterTypeOf(provisioning);
  const imageName = provisioning.spec.image?.name;
  if (isVmCluster(clusterType) && imageName)
    return fail(
      Reason.InvalidProvisioning,
      `Provisioning ${live.metadata.namespace}/${live.metadata.name} names Image ${imageName}, but spec.image is for bare-metal hosts and cluster-type is ${clusterType}`,
    );
  const claim = await claimCluster(
    clients,
    context.config.FUNCTIONS_NAMESPACE,
    live,
    provisioning.metadata.labels.cluster,
  );
  // Touches nothing else; the sweep retries, so it proceeds once the owner is deleted.
  if (claim.kind === 'taken') return fail(Reason.ClusterNameInUse, claim.message);
  if (claim.kind === 'gone') return { kind: 'skipped' };
  live = claim.object;
  const owner = claimOwnerOf(live);
  /** VMs: resolved before the claim. Bare metal: once Metal3 has provisioned every host. */
  let resolved: ResolvedCluster | undefined;
  /** Bare metal: each node's BareMetalHost as the index has it (state, NICs). */
  let hostsByMac: ReadonlyMap<string, HostMacEntry> | undefined;
  let input: ResolutionInput;
  /** Each node's host (BareMetalHost, VM pod or VMI), as the lookup found it: what is claimed. */
  let nodeHosts: NodeHost[];
  /** Hosts whose nodes left the spec of an installed cluster: kept claimed (claims.ts). */
  let retained: ClaimedHost[];
  try {
    const plan = planNodes(provisioning.spec);
    const macs = plan.nodes.map((n) => n.mac);
    let named: NodeHost[];
    if (isVmCluster(clusterType)) {
      const vms = await vmHostsOf(facts, clusterType, macs, owner);
      input = vms.input;
      named = vms.named;
      retained = await releaseUnnamed(clients, live, owner, named, vms.seen, context.log);
    } else {
      const byMac = await facts.hostsByMac(new Set(macs));
      hostsByMac = byMac;
      input = { hostsByMac: byMac, ipSources: context.config.IP_SOURCES };
      named = macs.flatMap((mac) => {
        const entry = byMac.get(mac);
        return entry ? [nodeHostOfEntry(mac, entry)] : [];
      });
      const seen = (await facts.hostsClaimedBy(owner)).map((key) => ({
        kind: 'BareMetalHost' as const,
        ...splitKey(key),
      }));
      retained = await releaseUnnamed(clients, live, owner, named, seen, context.log);
    }
    // One owner per host (contract section 12): someone else's host stops it here, untouched.
    const inUse = await firstInUse(clients, named, owner);
    if (inUse) return fail(Reason.HostInUse, inUse);
    // A node without a host claims nothing; its IP is not looked for before Metal3 is done.
    if (hostsByMac) {
      for (const node of plan.nodes) hostOfNode(hostsByMac, node.label, node.mac);
      // The preflight (contract section 14) before any claim or spec.image: a host too small for
      // its node is never reimaged, and one not yet inspected is waited for, untouched.
      const verdict = preflight(plan.nodes, hostsByMac, 'wait');
      if (verdict.kind === 'failed') return fail(verdict.reason, verdict.message);
      if (verdict.kind === 'waiting') {
        await recordWaiting(context, clients, live, verdict.message, handling);
        return { kind: 'waiting' };
      }
    } else resolved = resolveCluster(provisioning, input);
    // Every node has its host here (found, or resolved), in node order.
    nodeHosts = named;
  } catch (error) {
    // Spec errors (invalid) and world errors (resolution) both end as a False condition;
    // API faults (transient/internal) go back to the server as 503/500.
    if (!(error instanceof BpaError) || (error.kind !== 'invalid' && error.kind !== 'resolution'))
      throw error;
    return fail(errorReason(error), error.message);
  }

  // The Image is checked before any host is claimed: a missing Image holds no host.
  const namespace = live.metadata.namespace ?? '';
  const found = imageName ? await imageForHosts(clients, namespace, imageName) : undefined;
  if (found?.kind === 'failed') return fail(found.reason, found.message);

  const claims = await claimHosts(clients, facts, nodeHosts, owner, context.log);
  if (claims.kind === 'in-use') return fail(Reason.HostInUse, claims.message);

  let image: HostImageReport | undefined;
  if (imageName && found?.kind === 'ready') {
    const hostsOfNodes = nodeHosts.flatMap((host) => (host.kind === 'BareMetalHost' ? [host.key] : []));
    image = await applyHostImages(
      clients,
      { namespace, name: imageName },
      found.hostImage,
      hostsOfNodes,
      owner,
    );
    if (image.foreignHosts.length > 0) await reportForeignHosts(context, clients, live, image);
  }
  const fields = {
    ...(image ? { image } : {}),
    [claimedHostsField]: [...claims.claimed, ...retained],
    [retainedHostsField]: retained,
  };

  if (hostsByMac) {
    const verdict = judgeHostProvisioning(
      nodeHosts.map((host) => ({ host: host.key, metal3: hostsByMac.get(host.mac)?.metal3 })),
    );
    if (verdict.kind === 'failed') return fail(Reason.HostProvisioningFailed, verdict.message);
    if (verdict.kind === 'waiting') {
      await recordWaiting(context, clients, live, verdict.message, { ...fields, ...handling });
      return { kind: 'waiting' };
    }
    try {
      // The hosts as this lookup read them, all provisioned: their NICs (and the leases read now)
      // are the addresses of the installed OS.
      resolved = resolveCluster(provisioning, { ...input, leases: await facts.dhcpLeases() });
    } catch (error) {
      if (!(error instanceof BpaError) || error.kind !== 'resolution') throw error;
      return fail(errorReason(error), error.message);
    }
  }
  if (!resolved) throw new Error('host-lookup: nodes neither resolved nor waited for');
  const { nodes } = resolved;

  const ref = provisioningRef(live);
  const cluster = provisioning.metadata.labels.cluster;
  const event = await completeProvisioningStep(
    clients,
    context.functionName,
    live,
    {
      step,
      reason: Reason.HostsResolved,
      message: resolvedMessage(nodes) + (image ? imageMessage(image) : ''),
      ready: {
        status: 'Unknown',
        reason: Reason.Provisioning,
        message: 'Hosts resolved; rendering the inventory',
      },
      fields: { nodes, ...fields, ...handling },
      cause,
      announce: {
        type: EventTypes.hostsResolved,
        cluster,
        data: { provisioning: ref, cluster, clusterType, nodes },
      },
    },
    context.log,
    { apply: true },
  );
  if (!event) {
    context.log.info('hosts already resolved or resolution stale');
    return { kind: 'skipped' };
  }
  for (const node of nodes) context.metrics?.counter(nodesResolved).inc({ source: node.source });
  context.log.info('hosts resolved', { cluster, nodes: nodes.length });
  return { kind: 'resolved', event };
}

/**
 * HostsResolved and Ready Unknown, WaitingForProvisioning, naming each host not yet provisioned
 * and its state, with the claims (and image report) on status; a Normal Event when it changed.
 * The same message again writes nothing, so the status write's own update event ends here.
 */
async function recordWaiting(
  context: FunctionContext<HostLookupConfig>,
  clients: KubeClients,
  live: StoredObject,
  message: string,
  fields: Record<string, unknown>,
): Promise<void> {
  const ref = provisioningRef(live);
  const step = ProvisioningCondition.hostsResolved;
  const reason = Reason.WaitingForProvisioning;
  const result = await applyConditions(clients, provisioningTarget(ref.namespace, ref.name), {
    ref,
    conditions: [
      { type: step, status: 'Unknown', reason, message },
      { type: ProvisioningCondition.ready, status: 'Unknown', reason, message },
    ],
    fields,
    alreadyDone: (conditions) => {
      const current = conditionFor(conditions, step, ref.generation);
      return current?.status === 'Unknown' && current.reason === reason && current.message === message;
    },
    manager: fieldManagerFor(context.functionName),
    live,
  });
  if (result.outcome === 'written')
    await recordEvent(
      clients,
      {
        object: provisioningIdentity(ref),
        type: 'Normal',
        reason,
        message,
        component: context.functionName,
      },
      context.log,
    );
  context.log.info('waiting for Metal3 to provision the hosts', { message, status: result.outcome });
}

/** "; image beta.os.node on 2 hosts, 1 keeps its own image (metal3/h3)" */
export function imageMessage(image: HostImageReport): string {
  const foreign = image.foreignHosts.length;
  const kept =
    foreign === 0
      ? ''
      : `, ${foreign} keep${foreign === 1 ? 's' : ''} its own image (${image.foreignHosts.join(', ')})`;
  return `; image ${image.name} on ${image.hosts.length} host${image.hosts.length === 1 ? '' : 's'}${kept}`;
}

/** A Warning Event: the hosts that were not given the image because someone else's is set. */
async function reportForeignHosts(
  context: FunctionContext<HostLookupConfig>,
  clients: KubeClients,
  live: StoredObject,
  image: HostImageReport,
): Promise<void> {
  context.log.warn('hosts keep an image bpa-functions did not write', {
    image: image.name,
    hosts: image.foreignHosts,
  });
  await recordEvent(
    clients,
    {
      object: identityOf(live),
      type: 'Warning',
      reason: 'ForeignHostImage',
      message: `BareMetalHost ${image.foreignHosts.join(', ')} keep${image.foreignHosts.length === 1 ? 's' : ''} an image not written by bpa-functions: Image ${image.name} was not written there (clear spec.image of the host to let it be set)`,
      component: context.functionName,
    },
    context.log,
  );
}

/** "Resolved 3 nodes (2 from dhcp-leases, 1 from host-nics)": short whatever the cluster size. */
export function resolvedMessage(nodes: readonly ResolvedNode[]): string {
  const bySource = new Map<string, number>();
  for (const node of nodes) bySource.set(node.source, (bySource.get(node.source) ?? 0) + 1);
  const parts = [...bySource].map(([source, count]) => `${count} from ${source}`).join(', ');
  return `Resolved ${nodes.length} node${nodes.length === 1 ? '' : 's'} (${parts})`;
}
