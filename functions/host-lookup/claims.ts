import {
  claimedHostsOf,
  hostInUseMessage,
  judgeHostClaim,
  judgePodClaim,
  splitKey,
  type ClaimOwner,
  type ClaimedHost,
} from '../../shared/core/host-claim.js';
import type { HostMacEntry } from '../../shared/core/host-index.js';
import type { VirtletVm } from '../../shared/core/pod-index.js';
import type { KubevirtVm } from '../../shared/core/vmi-index.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import {
  claimBareMetalHost,
  claimVmi,
  claimVmPod,
  holderIsGone,
  releaseHost,
  type ClaimResult,
} from '../../shared/k8s/host-claims.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import type { Logger } from '../../shared/log.js';
import type { ClusterFacts } from './cluster-facts.js';

/**
 * host-lookup's part of "one owner per host" (contract section 12, ADR 0013 point 3): before a
 * Provisioning's nodes are resolved, the hosts it no longer names are released and the hosts it
 * names are checked (from the watched index: no API call); once every node has its host (bare
 * metal: found by MAC, before Metal3 has provisioned it, contract section 13; a VM: resolved),
 * each is claimed (shared/k8s/host-claims.ts: one PATCH per host not yet its own). A host held by anyone else
 * (another Provisioning, a Metal3Machine) stops the Provisioning with HostInUse and nothing of
 * it is touched.
 */

/** One node's host as the lookup found it: a BareMetalHost (index entry), a VM pod or a VMI. */
export interface NodeHost {
  mac: string;
  kind: ClaimedHost['kind'];
  /** `<namespace>/<name>`. */
  key: string;
  consumer?: HostMacEntry['consumer'] | string;
  resourceVersion?: string;
}

export const nodeHostOfEntry = (mac: string, entry: HostMacEntry): NodeHost => ({
  mac,
  kind: 'BareMetalHost',
  key: entry.host,
  consumer: entry.consumer,
  resourceVersion: entry.resourceVersion,
});

export const nodeHostOfVm = (mac: string, vm: VirtletVm): NodeHost => ({
  mac,
  kind: 'Pod',
  key: vm.pod,
  consumer: vm.consumer,
  resourceVersion: vm.resourceVersion,
});

export const nodeHostOfVmi = (mac: string, vm: KubevirtVm): NodeHost => ({
  mac,
  kind: 'VirtualMachineInstance',
  key: vm.vmi,
  consumer: vm.consumer,
  resourceVersion: vm.resourceVersion,
});

const idOf = (host: { kind: string; key: string }) => `${host.kind}:${host.key}`;
const claimedOf = (host: NodeHost): ClaimedHost => ({ kind: host.kind, ...splitKey(host.key) });
const what = (host: NodeHost) => (host.kind === 'BareMetalHost' ? 'Host' : 'VM');

/**
 * What `owner` holds and no longer names: the hosts of status.claimedHosts and `seen` (those the
 * index or the pod list shows claimed by it), minus `named` (the hosts of the spec's MACs).
 * Released at once while no KUD Job has run for the Provisioning (nothing is installed on them);
 * once one has (status.job), they are retained: returned, kept claimed, and released by
 * kud-job-launch when a KUD Job for the new spec has succeeded (a removed node is drained and
 * removed first; a refused removal keeps its host).
 */
export async function releaseUnnamed(
  clients: KubeClients,
  live: StoredObject,
  owner: ClaimOwner,
  named: readonly NodeHost[],
  seen: readonly ClaimedHost[],
  log: Logger,
): Promise<ClaimedHost[]> {
  const keep = new Set(named.map(idOf));
  const held = new Map<string, ClaimedHost>();
  const add = (host: ClaimedHost) => {
    const id = idOf({ kind: host.kind, key: `${host.namespace}/${host.name}` });
    if (!keep.has(id)) held.set(id, host);
  };
  claimedHostsOf(live.status).forEach(add);
  seen.forEach(add);
  if (kudHasRun(live)) {
    if (held.size > 0)
      log.info('hosts retained: their nodes left the spec of an installed cluster', {
        hosts: [...held.values()].map((host) => `${host.namespace}/${host.name}`),
      });
    return [...held.values()];
  }
  for (const host of held.values()) {
    const outcome = await releaseHost(clients, host, owner);
    if (outcome === 'released')
      log.info('host released: its node left the spec', {
        host: `${host.namespace}/${host.name}`,
        kind: host.kind,
      });
  }
  return [];
}

/** A KUD Job has been launched for this Provisioning (kud-job-launch records it in status.job). */
const kudHasRun = (live: StoredObject): boolean =>
  typeof live.status?.job === 'object' && live.status.job !== null;

/** The HostInUse message for the first host held by someone else (no write), or undefined. */
export async function firstInUse(
  clients: KubeClients,
  hosts: readonly NodeHost[],
  owner: ClaimOwner,
): Promise<string | undefined> {
  for (const host of hosts) {
    const verdict =
      host.kind !== 'BareMetalHost'
        ? judgePodClaim(typeof host.consumer === 'string' ? host.consumer : undefined, owner)
        : judgeHostClaim(typeof host.consumer === 'object' ? host.consumer : undefined, owner);
    if (verdict.kind !== 'taken') continue;
    // A Provisioning that is gone without releasing: its claim is taken over below.
    if (await holderIsGone(clients, verdict.holder)) continue;
    return hostInUseMessage(what(host), host.key, host.mac, verdict.holder);
  }
  return undefined;
}

export type ClaimsOutcome = { kind: 'held'; claimed: ClaimedHost[] } | { kind: 'in-use'; message: string };

/**
 * Claims every host (in node order). When one turns out taken (someone claimed it since the
 * index saw it), the claims written by this call are released again and HostInUse returned:
 * a Provisioning that cannot have all its hosts holds none of them.
 */
export async function claimHosts(
  clients: KubeClients,
  facts: ClusterFacts,
  hosts: readonly NodeHost[],
  owner: ClaimOwner,
  log: Logger,
): Promise<ClaimsOutcome> {
  const unique = [...new Map(hosts.map((host) => [idOf(host), host])).values()];
  const written: NodeHost[] = [];
  for (const host of unique) {
    const known = { consumer: host.consumer, resourceVersion: host.resourceVersion };
    const result: ClaimResult =
      host.kind === 'Pod'
        ? await claimVmPod(clients, host.key, known, owner)
        : host.kind === 'VirtualMachineInstance'
          ? await claimVmi(clients, host.key, known, owner)
          : await claimBareMetalHost(clients, host.key, known, owner);
    if (result.kind === 'taken') {
      for (const undo of written) await releaseHost(clients, claimedOf(undo), owner);
      return { kind: 'in-use', message: hostInUseMessage(what(host), host.key, host.mac, result.holder) };
    }
    if (result.written) {
      written.push(host);
      if (host.kind === 'BareMetalHost') facts.noteHostWritten(result.object, host.resourceVersion);
      log.info('host claimed', { host: host.key, kind: host.kind });
    }
  }
  return { kind: 'held', claimed: unique.map(claimedOf) };
}
