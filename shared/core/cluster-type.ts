import type { ClusterType } from '../schemas/node.js';
import { kubevirtClusterType, virtletClusterType, type Provisioning } from '../schemas/provisioning.js';

/**
 * The `cluster-type` label's path: `virtlet-vm` (Virtlet VM pods), `kubevirt-vm` (KubeVirt
 * VirtualMachineInstances); anything else (or nothing) is bare metal.
 */
export function clusterTypeOfLabel(label: string | undefined): ClusterType {
  if (label === virtletClusterType) return 'virtlet-vm';
  if (label === kubevirtClusterType) return 'kubevirt-vm';
  return 'baremetal';
}

export function clusterTypeOf(provisioning: Provisioning): ClusterType {
  return clusterTypeOfLabel(provisioning.metadata.labels['cluster-type']);
}

/** VM clusters (Virtlet or KubeVirt): the same inventory lines, no Metal3 host, no preflight. */
export const isVmCluster = (type: ClusterType): type is Exclude<ClusterType, 'baremetal'> =>
  type !== 'baremetal';
