import { resolve } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Env } from '../../shared/config.js';
import { describeError } from '../../shared/errors.js';
import { projectCrds, startControlPlane, type ControlPlane } from '../control-plane/index.js';
import type { NodeNetworkAttachment } from '../lab/lab-network.js';
import type { KubeletNode } from '../kubelet-node/index.js';
import { jobImagesEnv, startRealNodeCluster, type RealNodeImages } from './real-cluster.js';

/**
 * The cluster `bpa cluster`, `bpa dev`, `bpa demo` and the suites run on: the one-machine cluster
 * (etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the real node,
 * local/kubelet-node/: kubelet, containerd, kube-proxy and CoreDNS with the project's images), or
 * with `node: false` the control plane alone (nothing runs the pods, Jobs or garbage collection).
 * Where the node cannot run (no root, no namespaces) it falls back to the control plane alone
 * and says why in `fallback`, one line.
 */
export interface StackCluster {
  kubeConfig: KubeConfig;
  kubeconfigPath: string;
  server: string;
  controlPlane: ControlPlane;
  /** The node (local/kubelet-node) and the images imported into it, when it runs. */
  kubeletNode?: KubeletNode;
  images?: RealNodeImages;
  /**
   * Where machines of the node's network (the demo's lab hosts) attach: the node's lab bridge
   * (local/lab/lab-network.ts); absent without the node.
   */
  nodeNetwork?: NodeNetworkAttachment;
  /**
   * Env the functions need to run Jobs on this node (the Jobs' images by the names the node
   * holds: jobImagesEnv); pass it to startStack's functionsEnv. Empty without the node.
   */
  functionsEnv: Env;
  /** Why the node does not run although it was asked for (one line, from the node's preflight). */
  fallback?: string;
  /** Milliseconds from the call to everything ready. */
  readyMs: number;
  /** Resolves with a description when any process of the control plane exits. */
  exited: Promise<string>;
  stop(): Promise<void>;
}

export interface StackClusterOptions {
  /** Run the node (and the controllers). Default true. */
  node?: boolean;
  /** Where the admin kubeconfig is written (kept after stop). Default: a temporary file. */
  kubeconfigOut?: string;
  /** Progress lines. */
  log?: (line: string) => void;
  /**
   * Where the node cannot run: start the control plane alone and say why in `fallback` (default),
   * or throw the node's NodeUnavailable error (`bpa cluster`).
   */
  fallBack?: boolean;
  /**
   * More OCI archives imported into the node beside the project's images (a suite's test images,
   * local/images/test-images.ts buildTestImages).
   */
  extraImages?: string[];
  /**
   * kube-apiserver's --service-account-jwks-uri (serviceAccountJwksInCluster: the keys through the
   * `kubernetes` Service, which pods reach); needed where pods verify tokens (Knative's OIDC).
   */
  serviceAccountJwksUri?: string;
}

/** The reason the node's preflight gives when the machine cannot run it. */
export const nodeUnavailableReason = 'NodeUnavailable';

export async function startStackCluster(options: StackClusterOptions = {}): Promise<StackCluster> {
  const started = Date.now();
  const log = options.log ?? (() => undefined);
  const common = {
    crds: projectCrds().inputs,
    handleSignals: false,
    ...(options.kubeconfigOut ? { kubeconfigPath: resolve(options.kubeconfigOut) } : {}),
    log,
  };
  let fallback: string | undefined;
  if (options.node ?? true) {
    try {
      const real = await startRealNodeCluster({
        crds: common.crds,
        ...(common.kubeconfigPath ? { kubeconfigPath: common.kubeconfigPath } : {}),
        ...(options.serviceAccountJwksUri ? { serviceAccountJwksUri: options.serviceAccountJwksUri } : {}),
        ...(options.extraImages ? { extraImages: options.extraImages } : {}),
        log,
      });
      const { controlPlane } = real;
      return {
        kubeConfig: controlPlane.kubeConfig,
        kubeconfigPath: controlPlane.kubeconfigPath,
        server: controlPlane.server,
        controlPlane,
        kubeletNode: real.node,
        images: real.images,
        nodeNetwork: real.node.lab,
        functionsEnv: jobImagesEnv(real.images.references),
        readyMs: Date.now() - started,
        exited: controlPlane.exited,
        stop: () => real.stop(),
      };
    } catch (error) {
      const { reason, message } = describeError(error);
      if (reason !== nodeUnavailableReason || options.fallBack === false) throw error;
      fallback = message;
    }
  }
  const controlPlane = await startControlPlane(common);
  return {
    kubeConfig: controlPlane.kubeConfig,
    kubeconfigPath: controlPlane.kubeconfigPath,
    server: controlPlane.server,
    controlPlane,
    ...(fallback ? { fallback } : {}),
    functionsEnv: {},
    readyMs: Date.now() - started,
    exited: controlPlane.exited,
    stop: () => controlPlane.stop(),
  };
}

/** What runs, one line per part, for banners. */
export function describeStackCluster(cluster: StackCluster): string[] {
  const { controlPlane, kubeletNode } = cluster;
  const processes = controlPlane.processes;
  const lines = [
    `kube-apiserver           ${cluster.server}`,
    `kubeconfig               ${cluster.kubeconfigPath}`,
    `etcd                     ${controlPlane.etcdUrl}`,
  ];
  if (processes.kubeControllerManager && processes.kubeScheduler)
    lines.push(
      `kube-controller-manager  pid ${processes.kubeControllerManager.pid}, log ${processes.kubeControllerManager.logPath}`,
      `kube-scheduler           pid ${processes.kubeScheduler.pid}, log ${processes.kubeScheduler.logPath}`,
    );
  if (kubeletNode) {
    const { addresses, processes: parts } = kubeletNode;
    lines.push(
      `node                     ${kubeletNode.name} (real: containerd, kubelet, kube-proxy, CoreDNS) at ` +
        `${addresses.nodeIp}: pods in ${addresses.podCidr}, Services in ${controlPlane.serviceClusterIpRange}`,
      `  kubelet                pid ${parts.kubelet.pid}, log ${parts.kubelet.logPath}`,
      `  node cleanup           cgroup /${kubeletNode.cleanupTarget.cgroupName}, link ${addresses.hostInterface}, ` +
        `work dir ${kubeletNode.workDir}`,
      `images                   ${Object.keys(cluster.images?.references ?? {}).length} imported ` +
        `(${((cluster.images?.buildMs ?? 0) / 1000).toFixed(1)} s to build or find cached)` +
        (cluster.images?.component ? `; by digest in ${cluster.images.component}` : ''),
    );
  } else lines.push('node                     none: pods stay Pending, no Job runs (control plane alone)');
  return lines;
}
