import type { CloudEvent } from 'cloudevents';
import { planNodes } from '../../shared/core/node-plan.js';
import { resolveCluster, type ResolutionInput } from '../../shared/core/resolve.js';
import { claimedHostsField, podConsumerAnnotation, splitKey } from '../../shared/core/host-claim.js';
import { indexVirtletVmsByMac } from '../../shared/core/pod-index.js';
import { claimOwnerOf } from '../../shared/k8s/host-claims.js';
import { BpaError } from '../../shared/errors.js';
import { EventTypes } from '../../shared/events/types.js';
import { Reason } from '../../shared/reasons.js';
import { describeIssues } from '../../shared/schemas/issues.js';
import type { ResolvedNode } from '../../shared/schemas/node.js';
import { provisioningSchema } from '../../shared/schemas/provisioning.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import {
  ProvisioningCondition,
  completeProvisioningStep,
  failProvisioning,
  provisioningRef,
} from '../../shared/k8s/provisioning.js';
import { recordEvent } from '../../shared/k8s/events.js';
import type { StepCause } from '../../shared/k8s/step-causes.js';
import { identityOf, type StoredObject } from '../../shared/k8s/stored-object.js';
import type { FunctionContext } from '../../shared/server/types.js';
import type { ClusterFacts } from './cluster-facts.js';
import type { HostLookupConfig } from './config.js';
import { applyHostImages, imageForHosts, type HostImageReport } from './host-images.js';
import {
  claimHosts,
  firstInUse,
  nodeHostOfEntry,
  nodeHostOfVm,
  releaseUnnamed,
  type NodeHost,
} from './claims.js';
import { judgePodClaim } from '../../shared/core/host-claim.js';
import { claimCluster } from './lifecycle.js';
import { nodesResolved } from './metrics.js';

export type ResolveOutcome =
  /** Nodes resolved and recorded by this call (or by this cause's earlier delivery): reply/send this hosts.resolved. */
  | { kind: 'resolved'; event: CloudEvent<unknown> }
  /** Resolution failed; `event` (provisioning.failed) only when the failure was newly recorded. */
  | { kind: 'failed'; event?: CloudEvent<unknown> }
  /** Someone else recorded this generation meanwhile, or the Provisioning changed or is gone. */
  | { kind: 'skipped' };

/**
 * Validates the live Provisioning, resolves its nodes and records the result on its status:
 * `status.nodes` + HostsResolved True, or HostsResolved/Ready False with the contract's message
 * and a Warning Event. An invalid resource is a False condition, not an HTTP error: the event
 * that named it was fine. `cause`: the event being answered (none from the sweep), recorded with
 * the success so its redelivery gets the same reply.
 */
export async function resolveProvisioning(
  context: FunctionContext<HostLookupConfig>,
  clients: KubeClients,
  facts: ClusterFacts,
  live: StoredObject,
  cause?: StepCause,
): Promise<ResolveOutcome> {
  const step = ProvisioningCondition.hostsResolved;
  /** HostsResolved/Ready False with the reason, a Warning Event (once), the failed outcome. */
  const fail = async (reason: string, message: string): Promise<ResolveOutcome> => ({
    kind: 'failed',
    event: await failProvisioning(
      clients,
      context.functionName,
      live,
      { step, reason, message },
      context.log,
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
    return fail(error.reason, error.message);
  }
  const virtlet = provisioning.metadata.labels['cluster-type'] === 'virtlet-vm';
  const imageName = provisioning.spec.image?.name;
  if (virtlet && imageName)
    return fail(
      Reason.InvalidProvisioning,
      `Provisioning ${live.metadata.namespace}/${live.metadata.name} names Image ${imageName}, but spec.image is for bare-metal hosts and cluster-type is virtlet-vm`,
    );
  const claim = await claimCluster(
    clients,
    context.config.FUNCTIONS_NAMESPACE,
    live,
    provisioning.metadata.labels.cluster,
  );
  // Touches nothing else; the sweep retries, so it proceeds once the owner is deleted.
  if (claim.kind === 'taken') return fail(Reason.ClusterNameInUse, claim.message);
  const owner = claimOwnerOf(live);
  let nodes: ResolvedNode[];
  let clusterType;
  /** Each node's host (BareMetalHost or VM pod), as the lookup found it: what is claimed. */
  let nodeHosts: NodeHost[];
  try {
    let input: ResolutionInput;
    const macs = planNodes(provisioning.spec).nodes.map((n) => n.mac);
    let named: NodeHost[];
    if (virtlet) {
      const pods = await facts.runningPods();
      input = { pods };
      const vms = indexVirtletVmsByMac(pods);
      named = macs.flatMap((mac) => {
        const vm = vms.get(mac);
        return vm ? [nodeHostOfVm(mac, vm)] : [];
      });
      // Running VM pods this Provisioning holds by annotation: released when no longer named.
      const seen = pods.flatMap((pod) =>
        judgePodClaim(pod.metadata.annotations?.[podConsumerAnnotation], owner).kind === 'mine'
          ? [{ kind: 'Pod' as const, namespace: pod.metadata.namespace ?? '', name: pod.metadata.name }]
          : [],
      );
      await releaseUnnamed(clients, live, owner, named, seen, context.log);
    } else {
      const hostsByMac = await facts.hostsByMac(new Set(macs));
      input = { hostsByMac, leases: await facts.dhcpLeases(), ipSources: context.config.IP_SOURCES };
      named = macs.flatMap((mac) => {
        const entry = hostsByMac.get(mac);
        return entry ? [nodeHostOfEntry(mac, entry)] : [];
      });
      const seen = (await facts.hostsClaimedBy(owner)).map((key) => ({
        kind: 'BareMetalHost' as const,
        ...splitKey(key),
      }));
      await releaseUnnamed(clients, live, owner, named, seen, context.log);
    }
    // One owner per host (contract section 12): someone else's host stops it here, untouched.
    const inUse = await firstInUse(clients, named, owner);
    if (inUse) return fail(Reason.HostInUse, inUse);
    const resolved = resolveCluster(provisioning, input);
    nodes = resolved.nodes;
    clusterType = resolved.clusterType;
    const byMac = new Map(named.map((host) => [host.mac, host]));
    nodeHosts = nodes.flatMap((node) => byMac.get(node.mac) ?? []);
  } catch (error) {
    // Spec errors (invalid) and world errors (resolution) both end as a False condition;
    // API faults (transient/internal) go back to the server as 503/500.
    if (!(error instanceof BpaError) || (error.kind !== 'invalid' && error.kind !== 'resolution'))
      throw error;
    return fail(error.reason, error.message);
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
      fields: { nodes, ...(image ? { image } : {}), [claimedHostsField]: claims.claimed },
      cause,
      announce: {
        type: EventTypes.hostsResolved,
        cluster,
        data: { provisioning: ref, cluster, clusterType, nodes },
      },
    },
    context.log,
  );
  if (!event) {
    context.log.info('hosts already resolved or resolution stale');
    return { kind: 'skipped' };
  }
  for (const node of nodes) context.metrics?.counter(nodesResolved).inc({ source: node.source });
  context.log.info('hosts resolved', { cluster, nodes: nodes.length });
  return { kind: 'resolved', event };
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
