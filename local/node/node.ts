import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Informer, KubeConfig, ObjectCache, V1Pod } from '@kubernetes/client-node';
import { CoordinationV1Api, CoreV1Api, makeInformer } from '@kubernetes/client-node';
import { describeError } from '../../shared/errors.js';
import { freeLoopbackPort } from '../control-plane/free-port.js';
import type { CertificateAuthority } from '../control-plane/pki.js';
import { issueCertificate } from '../control-plane/pki.js';
import { ClusterDns } from './cluster-dns.js';
import { startCrashCleanup } from './crash-cleanup.js';
import type { ImageMap } from './image-map.js';
import { defaultImageMapFile, loadImageMap } from './image-map.js';
import { startLogServer } from './log-server.js';
import { NodeNetwork } from './network.js';
import type { NodeContext } from './node-context.js';
import { PodWorker } from './pod-worker.js';
import { checkNodePrerequisites } from './preflight.js';
import type { NodeRegistration } from './registration.js';
import { nodeCapacity, registerNode } from './registration.js';
import { serviceEnvironment } from './service-env.js';
import { ServiceProxy } from './service-proxy.js';
import type { ServiceView } from './service-view.js';
import { ServiceWatch } from './service-view.js';
import type { NodeSlot } from './slot.js';
import { claimSlot, releaseSlot, sweepSlot } from './slot.js';

export interface NodeOptions {
  /** Admin access to the cluster (the node acts with it; a real kubelet has system:node:<name>). */
  kubeConfig: KubeConfig;
  /** Signs the log endpoint's serving certificate and verifies kube-apiserver's client certificate. */
  ca: CertificateAuthority;
  /** The control plane's --service-cluster-ip-range, routed from every pod to the node's proxies. */
  serviceClusterIpRange: string;
  /** Default `bpa-node`. */
  name?: string;
  /** Image map files; default local/node/images.yaml. Later files win. */
  imageMapFiles?: string[];
  /** A slot claimed beforehand (startLocalCluster does, to pick the Service range); default: claim one. */
  slot?: NodeSlot;
  /** Reported as the node's kubeletVersion. */
  kubeletVersion?: string;
  /** Grace for pods still running at stop(). Default 5 s. */
  stopGraceMs?: number;
  /** Structured log lines. Default: none. */
  log?: (message: string, fields?: Record<string, unknown>) => void;
}

export interface LocalNode {
  name: string;
  slot: NodeSlot;
  /** 10.244.<slot>.0/24 */
  podCidr: string;
  /** The bridge's address: DNS server and next hop to the ClusterIPs. */
  gateway: string;
  /** The node's own network namespace (hostNetwork pods) and its address. */
  nodeNetns: string;
  nodeIp: string;
  kubeletPort: number;
  workDir: string;
  /** Stops every pod, removes namespaces, bridge and files. Idempotent. */
  stop(): Promise<void>;
}

function apiserverEndpoint(kubeConfig: KubeConfig): { host: string; port: number } {
  const server = new URL(kubeConfig.getCurrentCluster()?.server ?? 'https://127.0.0.1:6443');
  return { host: server.hostname, port: Number(server.port || 443) };
}

/**
 * Starts the node: checks prerequisites, claims a slot, sets up the bridge, DNS and Service proxy,
 * serves logs, registers the Node and runs the pods bound to it.
 */
export async function startNode(options: NodeOptions): Promise<LocalNode> {
  await checkNodePrerequisites();
  const name = options.name ?? 'bpa-node';
  const log = options.log ?? (() => undefined);
  const imageMap: ImageMap = loadImageMap(options.imageMapFiles ?? [defaultImageMapFile()]);
  const slot = options.slot ?? claimSlot();
  const workDir = mkdtempSync(join(tmpdir(), 'bpa-node-'));
  const runsDir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'bpa-node-runs-'));
  const crashCleanup: ChildProcess | undefined = startCrashCleanup(slot, [workDir, runsDir]);
  const cleanups: (() => Promise<void> | void)[] = [];
  const killNow = () => {
    sweepSlot(slot);
    rmSync(workDir, { recursive: true, force: true });
    rmSync(runsDir, { recursive: true, force: true });
  };
  process.on('exit', killNow);

  const core = options.kubeConfig.makeApiClient(CoreV1Api);
  const network = new NodeNetwork(slot, options.serviceClusterIpRange);
  let stopped = false;
  const workers = new Map<string, PodWorker>();
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    for (const cleanup of cleanups.reverse()) {
      try {
        await cleanup();
      } catch (error) {
        log('node clean-up step failed', { error: describeError(error).message });
      }
    }
    process.off('exit', killNow);
    releaseSlot(slot);
    crashCleanup?.kill();
    rmSync(workDir, { recursive: true, force: true });
    rmSync(runsDir, { recursive: true, force: true });
  };

  try {
    await network.setUp();
    const dns = new ClusterDns(network.gateway, workDir, log);
    dns.start();
    cleanups.push(() => dns.stop());
    const proxy = new ServiceProxy(network, apiserverEndpoint(options.kubeConfig), log);
    cleanups.push(() => proxy.stop());
    let views: ServiceView[] = [];
    const services = new ServiceWatch(
      options.kubeConfig,
      (next) => {
        views = next;
        dns.update(next);
        void proxy.sync(next);
      },
      (error) => log('service watch failed; restarting it', { error: describeError(error).message }),
    );
    await services.start();
    cleanups.push(() => services.stop());

    const kubeletPort = await freeLoopbackPort();
    const serving = issueCertificate(options.ca, workDir, {
      name: 'kubelet',
      commonName: `system:node:${name}`,
      organization: 'system:nodes',
      altNames: ['IP:127.0.0.1', `DNS:${name}`],
      usage: 'server',
    });
    const logServer: Server = await startLogServer({
      port: kubeletPort,
      certFile: serving.certFile,
      keyFile: serving.keyFile,
      clientCaFile: options.ca.certFile,
      source: {
        find: (namespace, pod, container, previous) =>
          [...workers.values()]
            .find((worker) => worker.key === `${namespace}/${pod}`)
            ?.logPath(container, previous),
      },
    });
    cleanups.push(() => new Promise<void>((resolve) => logServer.close(() => resolve())));
    cleanups.push(() => void logServer.closeAllConnections());

    const capacity = nodeCapacity();
    const registration: NodeRegistration = await registerNode({
      core,
      coordination: options.kubeConfig.makeApiClient(CoordinationV1Api),
      name,
      podCidr: network.podCidr,
      kubeletPort,
      kubeletVersion: options.kubeletVersion ?? 'v0.0.0-bpa-node',
      capacity,
      log,
    });
    cleanups.push(() => registration.stop());

    const podsDir = join(workDir, 'pods');
    const hostPathRoot = join(workDir, 'host-paths');
    mkdirSync(podsDir);
    mkdirSync(hostPathRoot);
    const context: NodeContext = {
      core,
      nodeName: name,
      hostIP: '127.0.0.1',
      network,
      imageMap,
      podsDir,
      runsDir,
      hostPathRoot,
      nodeCapacity: capacity,
      serviceEnv: (namespace, links) =>
        serviceEnvironment(views, namespace, links, options.serviceClusterIpRange),
      log,
    };
    const pods: Informer<V1Pod> & ObjectCache<V1Pod> = makeInformer(
      options.kubeConfig,
      `/api/v1/pods?fieldSelector=${encodeURIComponent(`spec.nodeName=${name}`)}`,
      () => core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${name}` }),
    );
    const onPod = (pod: V1Pod) => {
      const uid = pod.metadata?.uid ?? '';
      const existing = workers.get(uid);
      if (existing) return existing.update(pod);
      // A pod that ended before this node started stays as it is.
      if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') return;
      const worker = new PodWorker(context, pod);
      workers.set(uid, worker);
      worker.start();
      worker.update(pod);
    };
    pods.on('add', onPod);
    pods.on('update', onPod);
    pods.on('delete', (pod) => {
      const uid = pod.metadata?.uid ?? '';
      const worker = workers.get(uid);
      workers.delete(uid);
      void worker?.remove();
    });
    pods.on('error', (error) => {
      if (stopped) return;
      log('pod watch failed; restarting it', { error: describeError(error).message });
      setTimeout(() => !stopped && void pods.start().catch(() => undefined), 1000).unref();
    });
    await pods.start();
    cleanups.push(async () => {
      await pods.stop();
      const graceMs = options.stopGraceMs ?? 5000;
      await Promise.all([...workers.values()].map((worker) => worker.remove(graceMs)));
      workers.clear();
    });
    log('node ready', { node: name, podCidr: network.podCidr, kubeletPort });
    return {
      name,
      slot,
      podCidr: network.podCidr,
      gateway: network.gateway,
      nodeNetns: slot.nodeNetns,
      nodeIp: network.nodeIp,
      kubeletPort,
      workDir,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
