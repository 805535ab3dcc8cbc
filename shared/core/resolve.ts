import { BpaError } from '../errors.js';
import type { BareMetalHost } from '../schemas/bare-metal-host.js';
import type { ClusterType, IpSource, ResolvedNode } from '../schemas/node.js';
import type { Pod } from '../schemas/pod.js';
import type { VirtualMachineInstance } from '../schemas/vmi.js';
import type { Provisioning } from '../schemas/provisioning.js';
import { clusterTypeOf } from './cluster-type.js';
import { hostNicIp, indexHostsByMac, type HostMacEntry } from './host-index.js';
import type { LeaseIndex } from './leases.js';
import { planNodes, type NodePlan } from './node-plan.js';
import { indexVirtletVmsByMac } from './pod-index.js';
import { preflight } from './preflight.js';
import { indexKubevirtVmsByMac } from './vmi-index.js';

/** Where bare-metal IPs may come from, in the order they are tried. */
export type IpSourceName = 'leases' | 'nics';

/** A Provisioning's nodes with their IPs, in inventory order; the unit the renderers take. */
export interface ResolvedCluster {
  cluster: string;
  clusterType: ClusterType;
  nodes: ResolvedNode[];
  /** Worker labels in the order of the workers list (`[kube-node]` order). */
  workerOrder: string[];
}

export interface ResolutionInput {
  /** BareMetalHosts (bare-metal path). */
  hosts?: readonly BareMetalHost[];
  /**
   * Instead of `hosts`: their MAC index, already built (indexHostsFile) for at least the
   * nodes' MACs (nodeMacsOf).
   */
  hostsByMac?: ReadonlyMap<string, HostMacEntry>;
  /** A parsed DHCP lease file, when one is configured. */
  leases?: LeaseIndex;
  /** Pods (Virtlet path). */
  pods?: readonly Pod[];
  /** VirtualMachineInstances (KubeVirt path). */
  vmis?: readonly VirtualMachineInstance[];
  /** IP sources in order. Default: `leases` when a lease file is given, then `nics`. */
  ipSources?: readonly IpSourceName[];
}

/** Resolves every node of a Provisioning (contract section 3). Throws BpaError on the first failure. */
export function resolveCluster(provisioning: Provisioning, input: ResolutionInput): ResolvedCluster {
  const cluster = provisioning.metadata.labels.cluster;
  const clusterType = clusterTypeOf(provisioning);
  const plan = planNodes(provisioning.spec);
  let nodes: ResolvedNode[];
  if (clusterType === 'virtlet-vm')
    nodes = resolveVmNodes(plan, indexVirtletVmsByMac(input.pods ?? []), 'virtlet-pod');
  else if (clusterType === 'kubevirt-vm')
    nodes = resolveVmNodes(plan, indexKubevirtVmsByMac(input.vmis ?? []), 'kubevirt-vmi');
  else {
    const hostsByMac = input.hostsByMac ?? indexNodeHosts(plan, input.hosts ?? []);
    // Every host first (HostNotFound), then the preflight (contract section 14) on what the
    // hosts report, then the IPs: the order host-lookup follows.
    for (const node of plan.nodes) hostOfNode(hostsByMac, node.label, node.mac);
    const verdict = preflight(plan.nodes, hostsByMac, 'skip');
    if (verdict.kind === 'failed') throw new BpaError(verdict.reason, verdict.message, 'resolution');
    nodes = resolveBareMetalNodes(plan, hostsByMac, input.leases, input.ipSources);
  }
  return { cluster, clusterType, nodes, workerOrder: plan.workerOrder };
}

/** Only the nodes' MACs are indexed: the hosts list may be far longer than the cluster. */
function indexNodeHosts(plan: NodePlan, hosts: readonly BareMetalHost[]): Map<string, HostMacEntry> {
  return indexHostsByMac(hosts, new Set(plan.nodes.map((node) => node.mac)));
}

export function resolveBareMetalNodes(
  plan: NodePlan,
  hostsByMac: ReadonlyMap<string, HostMacEntry>,
  leases?: LeaseIndex,
  ipSources?: readonly IpSourceName[],
): ResolvedNode[] {
  const order = ipSources ?? (leases ? ['leases', 'nics'] : ['nics']);
  return plan.nodes.map(({ label, mac, roles }) => {
    const host = hostOfNode(hostsByMac, label, mac);
    for (const source of order) {
      const found = ipFrom(source, mac, host, leases);
      if (found) return { label, roles: [...roles], mac, ip: found.ip, source: found.source };
    }
    throw new BpaError(
      'IpAddressNotFound',
      `IP address not found for host with MAC address ${mac}`,
      'resolution',
      { node: label, macAddress: mac, host: host.host, sources: [...order] },
    );
  });
}

/** The host of node `label` (its MAC), or the contract's HostNotFound. */
export function hostOfNode(
  hostsByMac: ReadonlyMap<string, HostMacEntry>,
  label: string,
  mac: string,
): HostMacEntry {
  const host = hostsByMac.get(mac);
  if (!host)
    throw new BpaError('HostNotFound', `Host with MAC Address ${mac} not found`, 'resolution', {
      node: label,
      macAddress: mac,
    });
  return host;
}

function ipFrom(
  source: IpSourceName,
  mac: string,
  host: HostMacEntry,
  leases: LeaseIndex | undefined,
): { ip: string; source: IpSource } | undefined {
  if (source === 'leases') {
    const ip = leases?.byMac.get(mac);
    return ip ? { ip, source: 'dhcp-leases' } : undefined;
  }
  const ip = hostNicIp(host);
  return ip ? { ip, source: 'host-nics' } : undefined;
}

/**
 * The nodes of a VM cluster, Virtlet pods or KubeVirt VMIs alike (contract sections 3 and 14):
 * no running VM with the MAC is VmNotFound, one without an IP yet IpAddressNotFound; both retried
 * by the sweep, with the contract's one message.
 */
export function resolveVmNodes(
  plan: NodePlan,
  vmsByMac: ReadonlyMap<string, { ip?: string }>,
  source: Extract<IpSource, 'virtlet-pod' | 'kubevirt-vmi'>,
): ResolvedNode[] {
  return plan.nodes.map(({ label, mac, roles }) => {
    const vm = vmsByMac.get(mac);
    const ip = vm?.ip;
    if (!ip)
      throw new BpaError(
        vm ? 'IpAddressNotFound' : 'VmNotFound',
        `IP address not found for VM with MAC address ${mac}`,
        'resolution',
        { node: label, macAddress: mac },
      );
    return { label, roles: [...roles], mac, ip, source };
  });
}
