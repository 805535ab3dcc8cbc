import type { V1ConfigMap } from '@kubernetes/client-node';
import { clusterConfigMapName, clusterLabel } from '../../shared/core/names.js';
import type { NodeRole } from '../../shared/schemas/node.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { listConfigMaps } from '../../shared/k8s/config-maps.js';

/** One host to connect to: a node label with every role it has in the cluster. */
export interface ClusterNode {
  label: string;
  ip: string;
  roles: NodeRole[];
}

const keyPattern = /^(MASTER|WORKER)_(.+)$/;

/**
 * The nodes of a `<cluster>-configmap` (`MASTER_<label>: <ip>`, `WORKER_<label>: <ip>`): one
 * entry per node, masters first, so a node in both roles gets one session with both lists.
 */
export function clusterNodesFrom(data: Record<string, string>): ClusterNode[] {
  const nodes = new Map<string, ClusterNode>();
  const entries = Object.entries(data).flatMap(([key, ip]) => {
    const match = keyPattern.exec(key);
    return match && ip.trim() !== ''
      ? [{ role: match[1] as 'MASTER' | 'WORKER', label: match[2] as string, ip: ip.trim() }]
      : [];
  });
  for (const role of ['MASTER', 'WORKER'] as const) {
    for (const entry of entries.filter((e) => e.role === role)) {
      const key = `${entry.label}\u0000${entry.ip}`;
      const node = nodes.get(key) ?? { label: entry.label, ip: entry.ip, roles: [] };
      node.roles.push(role === 'MASTER' ? 'master' : 'worker');
      nodes.set(key, node);
    }
  }
  return [...nodes.values()];
}

/**
 * The cluster's node ConfigMap, found by label `cluster=<cluster>` in the namespace (the
 * inventory ConfigMap has the same label but no node keys). Undefined: the cluster is not
 * ready yet.
 */
export async function findClusterConfigMap(
  clients: KubeClients,
  namespace: string,
  cluster: string,
): Promise<V1ConfigMap | undefined> {
  const candidates = (await listConfigMaps(clients, namespace, `${clusterLabel}=${cluster}`)).filter(
    (cm) => clusterNodesFrom(cm.data ?? {}).length > 0,
  );
  return candidates.find((cm) => cm.metadata?.name === clusterConfigMapName(cluster)) ?? candidates[0];
}
