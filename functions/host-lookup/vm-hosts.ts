import {
  judgePodClaim,
  podConsumerAnnotation,
  type ClaimOwner,
  type ClaimedHost,
} from '../../shared/core/host-claim.js';
import { indexVirtletVmsByMac } from '../../shared/core/pod-index.js';
import type { ResolutionInput } from '../../shared/core/resolve.js';
import { indexKubevirtVmsByMac } from '../../shared/core/vmi-index.js';
import type { ClusterFacts } from './cluster-facts.js';
import { nodeHostOfVm, nodeHostOfVmi, type NodeHost } from './claims.js';

/** What the lookup found of a VM cluster's nodes, read once from VM_NAMESPACES. */
export interface VmHosts {
  /** The resolution's input: the pods or the VMIs. */
  input: ResolutionInput;
  /** The VM of each node that has one, in node order: what is claimed. */
  named: NodeHost[];
  /** The VMs this Provisioning holds by annotation: released when no longer named. */
  seen: ClaimedHost[];
}

/**
 * The VMs of a VM cluster: Virtlet pods (`virtlet-vm`, Running pods only, listed by phase) or
 * KubeVirt VirtualMachineInstances (`kubevirt-vm`, contract section 14). Both are claimed by the
 * same annotation (contract section 12); a VMI claimed by this Provisioning counts in any phase,
 * so one that stopped running is released once its node leaves the spec.
 */
export async function vmHostsOf(
  facts: ClusterFacts,
  clusterType: 'virtlet-vm' | 'kubevirt-vm',
  macs: readonly string[],
  owner: ClaimOwner,
): Promise<VmHosts> {
  const mine = (annotations: Record<string, string> | null | undefined) =>
    judgePodClaim(annotations?.[podConsumerAnnotation], owner).kind === 'mine';
  if (clusterType === 'kubevirt-vm') {
    const vmis = await facts.vmisOfVmNamespaces();
    const vms = indexKubevirtVmsByMac(vmis);
    return {
      input: { vmis },
      named: macs.flatMap((mac) => {
        const vm = vms.get(mac);
        return vm ? [nodeHostOfVmi(mac, vm)] : [];
      }),
      seen: vmis.flatMap((vmi) =>
        mine(vmi.metadata.annotations)
          ? [
              {
                kind: 'VirtualMachineInstance' as const,
                namespace: vmi.metadata.namespace ?? '',
                name: vmi.metadata.name,
              },
            ]
          : [],
      ),
    };
  }
  const pods = await facts.runningPods();
  const vms = indexVirtletVmsByMac(pods);
  return {
    input: { pods },
    named: macs.flatMap((mac) => {
      const vm = vms.get(mac);
      return vm ? [nodeHostOfVm(mac, vm)] : [];
    }),
    seen: pods.flatMap((pod) =>
      mine(pod.metadata.annotations)
        ? [{ kind: 'Pod' as const, namespace: pod.metadata.namespace ?? '', name: pod.metadata.name }]
        : [],
    ),
  };
}
