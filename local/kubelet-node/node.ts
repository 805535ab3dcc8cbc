/**
 * One real Kubernetes node: containerd (Debian's runc, the CNI bridge), kubelet and kube-proxy
 * (nftables mode) in a network and mount namespace of their own, registered with an existing
 * control plane (local/control-plane). Several per machine: each takes a free index for its
 * addresses, interface and cgroup names (network.ts). Stopped, or its launcher killed, it leaves
 * nothing behind (cleanup.ts).
 */
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import { BpaError, describeError } from '../../shared/errors.js';
import type { ControlPlane } from '../control-plane/control-plane.js';
import { pinnedVersion } from '../control-plane/assets.js';
import { startManagedProcess, type ManagedProcess } from '../control-plane/managed-process.js';
import { issueCertificate } from '../control-plane/pki.js';
import { waitFor } from '../control-plane/wait.js';
import { locateNodeBinaries, type NodeBinaries } from './assets.js';
import { cleanupNow, leftovers, startCleanupWatchdog, type CleanupTarget } from './cleanup.js';
import { containerdSocket, writeNodeConfig } from './config.js';
import { importImage, pauseImageName, writePauseImage } from './images.js';
import {
  claimAddresses,
  kubeletNodeApiAddress,
  labAttachmentOf,
  linkNode,
  startApiRelay,
  useAdvertisedRelay,
  type LabAttachment,
  type NodeAddresses,
} from './network.js';
import { createCgroupRoot, startSandbox } from './sandbox.js';

export type NodeControlPlane = Pick<
  ControlPlane,
  'server' | 'access' | 'pki' | 'serviceClusterIpRange' | 'kubeConfig' | 'advertiseAddress'
>;

export interface KubeletNodeOptions {
  controlPlane: NodeControlPlane;
  /** Default `bpa-node-<index>`. */
  nodeName?: string;
  /** OCI layout tars imported before the kubelet starts. */
  images?: string[];
  /** Run CoreDNS on the node as the pods' nameserver (cluster.local). Default true. */
  clusterDns?: boolean;
  /** Budget for Node Ready. Default 60 s. */
  readyTimeoutMs?: number;
  log?: (line: string) => void;
  binaries?: NodeBinaries;
}

export interface KubeletNode {
  name: string;
  addresses: NodeAddresses;
  workDir: string;
  /**
   * The machine's directory that is the node's `/` for hostPath volumes under /opt: the node's
   * /opt is `<hostRoot>/opt` (sandbox.ts), e.g. KUD's /opt/kud/multi-cluster.
   */
  hostRoot: string;
  /** The namespace holder: `nsenter --target <pid> --net --mount` runs a command on the node. */
  sandboxPid: number;
  /** Where a lab's machines attach (local/lab/lab-network.ts): the bridge lab0 in the node's namespace. */
  lab: LabAttachment;
  processes: Record<'containerd' | 'kubelet' | 'kubeProxy', { pid: number; logPath: string }> & {
    coredns?: { pid: number; logPath: string };
  };
  /** Milliseconds from the call to containerd serving, to the kubelet started, to Node Ready. */
  timings: { containerdMs: number; kubeletStartedMs: number; readyMs: number };
  importImage(tarPath: string): Promise<string>;
  /** The last lines of each process's log, for a failing test's message. */
  logTails(lines?: number): string;
  /** What identifies everything the node made (for a check after a crash: cleanup.ts leftovers). */
  cleanupTarget: CleanupTarget;
  /** What is still on the machine: empty once stopped. */
  leftovers(): string[];
  /** Stops everything and deletes the Node object. Idempotent. */
  stop(): Promise<void>;
}

const nodeReady = (node: V1Node) =>
  node.status?.conditions?.some((condition) => condition.type === 'Ready' && condition.status === 'True') ??
  false;

/** Starts a node and resolves once it is Ready. */
export async function startKubeletNode(options: KubeletNodeOptions): Promise<KubeletNode> {
  const started = Date.now();
  const log = options.log ?? (() => undefined);
  const binaries = options.binaries ?? (await locateNodeBinaries());
  const { addresses, workDir } = await claimAddresses(tmpdir());
  const name = options.nodeName ?? `bpa-node-${addresses.index}`;
  for (const dir of ['cni', 'pki', 'logs']) mkdirSync(join(workDir, dir));
  const cgroupName = `bpa-kubelet-node-${addresses.index}`;
  const { controlPlane } = options;

  const sandbox = await startSandbox(workDir).catch((error: unknown) => {
    rmSync(workDir, { recursive: true, force: true });
    throw error;
  });
  const target: CleanupTarget = {
    mountNamespace: sandbox.mountNamespace.name,
    cgroupName,
    hostInterface: addresses.hostInterface,
    workDir,
  };
  const watchdog = startCleanupWatchdog(target, sandbox.mountNamespace);
  /** Processes still in the node's namespace at the end of stop, found while it was pinned. */
  let processesLeft: string[] | undefined;
  const running: ManagedProcess[] = [];
  let relay: { port: number; close(): Promise<void> } | undefined;
  let releaseAdvertised: (() => Promise<void>) | undefined;
  let stopped = false;
  const core = controlPlane.kubeConfig.makeApiClient(CoreV1Api);
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    process.off('exit', onExit);
    await relay?.close();
    await releaseAdvertised?.();
    // kube-proxy and the kubelet before containerd, which they talk to.
    for (const child of [...running].reverse()) await child.stop(5_000);
    cleanupNow(target);
    watchdog.kill();
    // No process can enter the namespace from here (none is left in it, and only we hold it), so
    // what is left now is left for good; after close its name may be another node's.
    processesLeft = leftovers(target).filter((line) => line.startsWith('process '));
    sandbox.mountNamespace.close();
    await core.deleteNode({ name }).catch(() => undefined);
  };
  const onExit = () => {
    for (const child of running) child.killNow();
    cleanupNow(target);
    // Else the watchdog, seeing this process gone, would clean up again: by then another node
    // may have taken this one's index, directory and cgroup names.
    watchdog.kill();
  };
  process.on('exit', onExit);
  const logTails = (lines = 30) =>
    running
      .map((child) => `--- ${child.name} (last lines of its log) ---\n${child.logTail(lines)}`)
      .join('\n');

  const inNode = (processName: string, command: string, args: string[]) => {
    const child = startManagedProcess(
      processName,
      'nsenter',
      [
        '--target',
        String(sandbox.pid),
        '--mount',
        '--net',
        '--',
        'env',
        `PATH=${binaries.containerdDir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
        command,
        ...args,
      ],
      join(workDir, 'logs', `${processName}.log`),
    );
    running.push(child);
    return child;
  };
  const exitedEarly = () =>
    running
      .map(
        (child) =>
          child.exit() && `${child.name} exited (code ${child.exit()?.code}, signal ${child.exit()?.signal})`,
      )
      .find(Boolean) || undefined;

  try {
    await linkNode(addresses, sandbox.pid, controlPlane.serviceClusterIpRange);
    createCgroupRoot(cgroupName);
    relay = await startApiRelay(addresses.hostIp, new URL(controlPlane.server));
    // Pods reach kube-apiserver (the `kubernetes` Service) only when it advertises the relayed address.
    if (controlPlane.advertiseAddress === kubeletNodeApiAddress) {
      releaseAdvertised = await useAdvertisedRelay(new URL(controlPlane.server));
    }
    const serving = issueCertificate(controlPlane.pki.ca, join(workDir, 'pki'), {
      name: 'kubelet-serving',
      commonName: `system:node:${name}`,
      organization: 'system:nodes',
      usage: 'server',
      altNames: [`IP:${addresses.nodeIp}`, `DNS:${name}`],
    });
    const kubernetesVersion = pinnedVersion('KUBERNETES_VERSION');
    const pauseTar = writePauseImage(binaries.pause, kubernetesVersion, workDir);
    const files = writeNodeConfig({
      workDir,
      nodeName: name,
      addresses,
      cgroupName,
      sandboxImage: pauseImageName(kubernetesVersion),
      runc: binaries.runc,
      cniDir: binaries.cniDir,
      server: `https://${addresses.hostIp}:${relay.port}`,
      apiserverCaPem: controlPlane.access.caPem,
      token: controlPlane.access.token,
      clientCaFile: controlPlane.pki.ca.certFile,
      servingCertFile: serving.certFile,
      servingKeyFile: serving.keyFile,
      clusterDns: options.clusterDns ?? true,
    });

    inNode('containerd', binaries.containerd, ['--config', files.containerd]);
    // The socket as the node sees it, through the holder's root.
    const socket = `/proc/${sandbox.pid}/root${containerdSocket}`;
    await waitFor(async () => (existsSync(socket) ? true : undefined), {
      what: 'containerd',
      timeoutMs: 30_000,
      intervalMs: 50,
      abortIf: exitedEarly,
    });
    const containerdMs = Date.now() - started;
    log(`containerd serving after ${containerdMs} ms`);
    for (const tar of [pauseTar, ...(options.images ?? [])])
      await importImage(sandbox.pid, binaries.ctr, tar);

    inNode('kubelet', binaries.kubelet, [
      `--config=${files.kubelet}`,
      `--kubeconfig=${files.kubeconfig}`,
      `--hostname-override=${name}`,
      `--node-ip=${addresses.nodeIp}`,
    ]);
    const kubeletStartedMs = Date.now() - started;
    inNode('kube-proxy', binaries.kubeProxy, [`--config=${files.kubeProxy}`]);
    const coredns =
      (options.clusterDns ?? true)
        ? inNode('coredns', binaries.coredns, ['-conf', files.corefile])
        : undefined;
    await waitFor(
      async () => {
        const node = await core.readNode({ name });
        return nodeReady(node) ? true : undefined;
      },
      {
        what: `Node ${name} Ready`,
        timeoutMs: options.readyTimeoutMs ?? 60_000,
        intervalMs: 100,
        abortIf: exitedEarly,
      },
    );
    const readyMs = Date.now() - started;
    log(`Node ${name} Ready after ${readyMs} ms`);
    const [containerd, kubelet, kubeProxy] = running;
    if (!containerd || !kubelet || !kubeProxy) throw new Error('a node process is missing');
    const info = (child: ManagedProcess) => ({ pid: child.pid, logPath: child.logPath });
    return {
      name,
      addresses,
      workDir,
      hostRoot: join(workDir, 'host'),
      sandboxPid: sandbox.pid,
      lab: labAttachmentOf(addresses, sandbox.pid),
      processes: {
        containerd: info(containerd),
        kubelet: info(kubelet),
        kubeProxy: info(kubeProxy),
        ...(coredns ? { coredns: info(coredns) } : {}),
      },
      timings: { containerdMs, kubeletStartedMs, readyMs },
      importImage: (tarPath) => importImage(sandbox.pid, binaries.ctr, tarPath),
      logTails,
      cleanupTarget: target,
      leftovers: () =>
        processesLeft === undefined
          ? leftovers(target)
          : [...processesLeft, ...leftovers(target).filter((line) => !line.startsWith('process '))],
      stop,
    };
  } catch (error) {
    const tails = logTails();
    await stop();
    throw new BpaError(
      'NodeStartFailed',
      `the node did not start: ${describeError(error).message}\n${tails}`,
      'internal',
    );
  }
}
