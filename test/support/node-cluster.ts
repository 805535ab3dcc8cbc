/**
 * A test file's own one-machine cluster (local/stack/cluster.ts): etcd,
 * kube-apiserver, kube-controller-manager, kube-scheduler and a real node (local/kubelet-node:
 * containerd, kubelet, kube-proxy, CoreDNS) with the project's images (`npm run images`' build,
 * cached), an index of its own, the project's CRDs and one namespace for the file. Jobs and pods
 * really run, from the images; the node's lab bridge is where the lab's sshd hosts attach
 * (`nodeNetwork`), and `functionsEnv` names the Jobs' images as the node holds them. Same fields
 * as useTestCluster. Needs root (set BPA_IMAGES_DIR when several trees build images at once).
 */
import { basename } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Env } from '../../shared/config.js';
import { createNamespace, uniqueNamespaceName } from '../../local/control-plane/index.js';
import type { NodeNetworkAttachment } from '../../local/lab/lab-network.js';
import { startStackCluster, type StackCluster } from '../../local/stack/cluster.js';

export interface NodeTestCluster {
  kubeConfig: KubeConfig;
  kubeconfigPath: string;
  server: string;
  namespace: string;
  nodeNetwork: NodeNetworkAttachment;
  /** The Jobs' images by the names the node holds: spread into the stack's functionsEnv. */
  functionsEnv: Env;
  stackCluster: StackCluster;
  /** Stops the cluster: call it last in the file's afterAll, after what uses the cluster. */
  stop(): Promise<void>;
}

/** Registers a beforeAll hook; read the fields inside tests or hooks, not at load time. */
export function useNodeCluster(
  options: {
    namespacePrefix?: string;
    /**
     * false: the control plane alone (no node, no Job controller's pods run), for a suite whose
     * stack watches every namespace and so must not share the run's cluster with other files:
     * its functions would act on their Provisionings and Jobs.
     */
    node?: boolean;
  } = {},
): NodeTestCluster {
  let state: { cluster: StackCluster; namespace: string } | undefined;
  const ready = () => {
    if (!state)
      throw new Error('useNodeCluster(): read the cluster inside a test or a hook, after beforeAll');
    return state;
  };

  beforeAll(async () => {
    const started = Date.now();
    const node = options.node ?? true;
    const cluster = await startStackCluster({ fallBack: false, node });
    if (node)
      process.stderr.write(
        `[node-cluster] real node ${cluster.kubeletNode?.name} ready in ${((Date.now() - started) / 1000).toFixed(1)} s ` +
          `(images ${((cluster.images?.buildMs ?? 0) / 1000).toFixed(1)} s, node Ready ${((cluster.kubeletNode?.timings.readyMs ?? 0) / 1000).toFixed(1)} s)\n`,
      );
    const testFile = expect.getState().testPath;
    const prefix =
      options.namespacePrefix ?? (testFile ? basename(testFile).replace(/\.test\.ts$/, '') : 'test');
    const namespace = await createNamespace(cluster.kubeConfig, uniqueNamespaceName(prefix));
    state = { cluster, namespace };
  }, 300_000);

  return {
    get kubeConfig() {
      return ready().cluster.kubeConfig;
    },
    get kubeconfigPath() {
      return ready().cluster.kubeconfigPath;
    },
    get server() {
      return ready().cluster.server;
    },
    get namespace() {
      return ready().namespace;
    },
    get nodeNetwork() {
      return ready().cluster.nodeNetwork!;
    },
    get functionsEnv() {
      return ready().cluster.functionsEnv;
    },
    get stackCluster() {
      return ready().cluster;
    },
    stop: async () => {
      await state?.cluster.stop();
      state = undefined;
    },
  };
}
