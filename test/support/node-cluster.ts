/**
 * A test file's own one-machine cluster (local/stack/cluster.ts): etcd, kube-apiserver,
 * kube-controller-manager, kube-scheduler and the node (OUR IMITATION of a kubelet), in a slot of
 * its own, with the project's CRDs and one namespace for the file. Jobs and pods really run; the
 * node's network is where the lab's sshd hosts attach. Same fields as useTestCluster. Needs root.
 */
import { basename } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { createNamespace, uniqueNamespaceName } from '../../local/control-plane/index.js';
import type { NodeNetworkAttachment } from '../../local/lab/lab-network.js';
import { startStackCluster, type StackCluster } from '../../local/stack/cluster.js';

export interface NodeTestCluster {
  kubeConfig: KubeConfig;
  kubeconfigPath: string;
  server: string;
  namespace: string;
  nodeNetwork: NodeNetworkAttachment;
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
    const cluster = await startStackCluster({ fallBack: false, node: options.node ?? true });
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
    get stackCluster() {
      return ready().cluster;
    },
    stop: async () => {
      await state?.cluster.stop();
      state = undefined;
    },
  };
}
