import { CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import {
  kubeconfigDigestField,
  kubeconfigSecretKey,
  kubeconfigSecretName,
} from '../../shared/core/lifecycle-names.js';
import { ownershipError } from '../../shared/core/ownership.js';
import type { ProvisioningOwner } from '../../shared/core/owner.js';
import { sha256Hex } from '../../shared/core/hash.js';
import { transient } from '../../shared/errors.js';
import { apiMessage, apiStatusCode, isNotFound, readOrUndefined } from '../../shared/k8s/api-errors.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { ownershipOf } from '../../shared/k8s/owned-objects.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import type { Logger } from '../../shared/log.js';

/** The reason of a drain that could not be done (transient: retried by the broker and the sweep). */
export const drainFailedReason = 'DrainFailed';
/** One drain, all nodes, at most this long: the launcher's request must not hang on a dead cluster. */
const drainTimeoutMs = 60_000;
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** Pods a drain leaves: those of DaemonSets (they tolerate the cordon) and static (mirror) pods. */
const evictable = (pod: V1Pod) =>
  !pod.metadata?.annotations?.['kubernetes.io/config.mirror'] &&
  !(pod.metadata?.ownerReferences ?? []).some((ref) => ref.kind === 'DaemonSet') &&
  pod.status?.phase !== 'Succeeded' &&
  pod.status?.phase !== 'Failed';

/**
 * The installed cluster's API, through its kubeconfig as the publisher stored it: the Secret
 * `<cluster>-admin-kubeconfig` in the Provisioning's namespace, only when its uid is the one
 * status.ownedObjects records (contract section 12: a look-alike is never used).
 */
async function clusterApi(
  clients: KubeClients,
  live: StoredObject,
  owner: ProvisioningOwner,
  cluster: string,
) {
  const name = kubeconfigSecretName(cluster);
  const stored = await readOrUndefined(`read Secret ${owner.namespace}/${name}`, () =>
    clients.core.readNamespacedSecret({ namespace: owner.namespace, name }),
  );
  const value = stored?.data?.[kubeconfigSecretKey];
  if (!stored || !value)
    throw transient(
      drainFailedReason,
      `Cannot drain: the kubeconfig Secret ${owner.namespace}/${name} of cluster ${cluster} is not published`,
    );
  const refused = ownershipError('Secret', stored, ownershipOf(owner, live));
  if (refused) throw refused;
  // The Secret sits in the tenant's namespace: its data is used only as the functions published
  // it (digest in status), never pointed elsewhere by an edit (hostile input gets nothing).
  const adminConf = Buffer.from(value, 'base64').toString('utf8');
  if (sha256Hex(adminConf) !== live.status?.[kubeconfigDigestField])
    throw transient(
      drainFailedReason,
      `Cannot drain: the kubeconfig Secret ${owner.namespace}/${name} of cluster ${cluster} is not the one the functions published (changed since); restore it or delete the Provisioning's nodes by hand`,
    );
  const config = new KubeConfig();
  config.loadFromString(adminConf);
  return config.makeApiClient(CoreV1Api);
}

/**
 * Drains nodes before Kubespray's remove-node.yml resets them (contract section 14), as
 * `kubectl drain` does: cordon (spec.unschedulable), then evict every pod bound to the node through
 * the Eviction API, so PodDisruptionBudgets are honoured (a 429 is retried later, never forced),
 * leaving DaemonSet and static pods. A node the cluster does not know (it never joined) has nothing
 * to drain. Evicted means accepted by the API server: the pods' termination is their kubelet's.
 * Any failure is transient (DrainFailed): the launch is retried and nothing is removed meanwhile.
 */
export async function drainNodes(
  clients: KubeClients,
  live: StoredObject,
  owner: ProvisioningOwner,
  cluster: string,
  nodes: readonly string[],
  log: Logger,
): Promise<void> {
  const api = await clusterApi(clients, live, owner, cluster);
  const drain = async () => {
    for (const node of nodes) {
      try {
        await api.patchNode({ name: node, body: { spec: { unschedulable: true } } }, mergePatch);
      } catch (error) {
        if (isNotFound(error)) {
          log.info('node not in the cluster: nothing to drain', { cluster, node });
          continue;
        }
        throw error;
      }
      const pods = await api.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` });
      const evicted: string[] = [];
      for (const pod of pods.items.filter(evictable)) {
        const namespace = pod.metadata?.namespace ?? '';
        const name = pod.metadata?.name ?? '';
        if (pod.metadata?.deletionTimestamp) continue;
        try {
          await api.createNamespacedPodEviction({
            namespace,
            name,
            body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace } },
          });
          evicted.push(`${namespace}/${name}`);
        } catch (error) {
          if (isNotFound(error)) continue;
          throw error;
        }
      }
      log.info('node drained', { cluster, node, evicted });
    }
  };
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no answer within ${drainTimeoutMs / 1000} s`)),
      drainTimeoutMs,
    );
  });
  try {
    await Promise.race([drain(), timeout]);
  } catch (error) {
    const why =
      apiStatusCode(error) === 429
        ? 'a PodDisruptionBudget does not allow the eviction yet'
        : apiMessage(error);
    throw transient(
      drainFailedReason,
      `Cannot drain node(s) ${nodes.join(', ')} of cluster ${cluster} through its kubeconfig: ${why}`,
    );
  } finally {
    clearTimeout(timer);
  }
}
