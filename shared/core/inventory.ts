import type { ClusterType, ResolvedNode } from '../schemas/node.js';
import { isVmCluster } from './cluster-type.js';

export interface InventoryInput {
  clusterType: ClusterType;
  /** Nodes in inventory order: masters first, then workers that are not masters. */
  nodes: readonly ResolvedNode[];
  /** `[kube-node]` order (the workers list order). Default: worker nodes in `nodes` order. */
  workerOrder?: readonly string[];
}

/**
 * The KUD Ansible inventory, byte for byte as contract section 4 shows it: two spaces after
 * the label on `[all]` lines, one blank line between sections, a final newline. The OVN and
 * Virtlet sections are left out for VM clusters (Virtlet or KubeVirt), whose `[all]` lines log in
 * as root.
 */
export function renderHostsIni({ clusterType, nodes, workerOrder }: InventoryInput): string {
  const virtlet = isVmCluster(clusterType);
  const masters = nodes.filter((node) => node.roles.includes('master')).map((node) => node.label);
  const workers = workerOrder
    ? [...workerOrder]
    : nodes.filter((node) => node.roles.includes('worker')).map((node) => node.label);
  const all = nodes.map(
    (node) =>
      `${node.label}  ansible_ssh_host=${node.ip} ansible_ssh_port=22${virtlet ? ' ansible_ssh_user=root' : ''}`,
  );
  const sections: [string, string[]][] = [
    ['all', all],
    ['kube-master', masters],
    ['kube-node', workers],
    ['etcd', masters],
  ];
  if (!virtlet) sections.push(['ovn-central', masters], ['ovn-controller', workers], ['virtlet', workers]);
  sections.push(['k8s-cluster:children', ['kube-node', 'kube-master']]);
  return sections.map(([name, lines]) => [`[${name}]`, ...lines].join('\n') + '\n').join('\n');
}
