/**
 * How the integration project's global setup hands the cluster to test files: environment
 * variables (test workers are separate processes) and a handle on globalThis for the teardown
 * (global setup and teardown share the jest parent process).
 */

export const testEnv = {
  /** Admin kubeconfig file of the run's control plane. */
  kubeconfig: 'BPA_TEST_KUBECONFIG',
  /** https://127.0.0.1:<port> of its kube-apiserver. */
  server: 'BPA_TEST_SERVER',
  /** Directory of the kube-apiserver and etcd binaries in use. */
  assetsDir: 'BPA_TEST_ASSETS_DIR',
  /** Name of the run's node (the real node, local/kubelet-node) when it runs: Jobs and pods really run. */
  node: 'BPA_TEST_NODE',
  /**
   * The machine's directory that hostPath volumes under /opt are rooted in (the node's /opt is
   * `<it>/opt`: KUD's /opt/kud/multi-cluster), read and written by tests as the node's pods see it.
   */
  nodeHostPaths: 'BPA_TEST_NODE_HOST_PATHS',
  /** JSON: the functions' image env (KUD_IMAGE, CLEANUP_IMAGE, ...) naming images the node holds. */
  nodeImages: 'BPA_TEST_NODE_IMAGES',
  /** JSON: where lab hosts join the run's node (local/lab/lab-network.ts NodeNetworkAttachment). */
  nodeLab: 'BPA_TEST_NODE_LAB',
  /** Why the node does not run (one line): the run has the control plane alone. */
  noNode: 'BPA_TEST_NO_NODE',
  /** Knative Eventing's version when the global setup installed it on the run's node. */
  knative: 'BPA_TEST_KNATIVE',
  /** JSON: Knative's images on the run's node, `ko://<import path>` -> image by digest. */
  knativeImages: 'BPA_TEST_KNATIVE_IMAGES',
  /** Why Knative Eventing is not installed (one line). */
  noKnative: 'BPA_TEST_NO_KNATIVE',
} as const;

/** What the teardown stops: the one-machine cluster, or the control plane alone. */
export interface RunningCluster {
  stop(): Promise<void>;
}

const handleKey = '__bpaTestCluster';

type WithHandle = typeof globalThis & { [handleKey]?: RunningCluster };

export const keepCluster = (cluster: RunningCluster) => {
  (globalThis as WithHandle)[handleKey] = cluster;
};

export const takeCluster = (): RunningCluster | undefined => {
  const cluster = (globalThis as WithHandle)[handleKey];
  delete (globalThis as WithHandle)[handleKey];
  return cluster;
};
