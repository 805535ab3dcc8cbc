import type { ClusterType } from '../schemas/node.js';
import { virtletClusterType, type Provisioning } from '../schemas/provisioning.js';

/** `cluster-type: virtlet-vm` selects the VM path; anything else (or nothing) is bare metal. */
export function clusterTypeOf(provisioning: Provisioning): ClusterType {
  return provisioning.metadata.labels['cluster-type'] === virtletClusterType ? 'virtlet-vm' : 'baremetal';
}
