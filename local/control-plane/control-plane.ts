import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { BpaError, describeError } from '../../shared/errors.js';
import type { ControlPlaneBinaries } from './assets.js';
import { locateBinaries } from './assets.js';
import { writeCredentials } from './credentials.js';
import type { CrdInput, InstalledCrd } from './crds.js';
import { installCrds } from './crds.js';
import { freeLoopbackPorts } from './free-port.js';
import type { AdminAccess } from './kubeconfig.js';
import { adminKubeConfig, writeKubeconfigFile } from './kubeconfig.js';
import type { ManagedProcess } from './managed-process.js';
import { startManagedProcess } from './managed-process.js';
import type { ControllerProcess } from './controllers.js';
import { startControllers, waitControllersHealthy } from './controllers.js';
import type { CertificateAuthority } from './pki.js';
import { createCertificateAuthority, issueCertificate } from './pki.js';
import { apiserverReady, etcdHealthy } from './probes.js';
import { waitFor } from './wait.js';

export interface ControlPlaneOptions {
  /** The binaries to run; default: locateBinaries() (KUBEBUILDER_ASSETS, TEST_ASSET_*, cache, build). */
  binaries?: ControlPlaneBinaries;
  /** CRDs installed (and awaited) before startControlPlane resolves. */
  crds?: CrdInput[];
  /** Where to write the kubeconfig; default `<temp dir>/kubeconfig` (removed on stop). */
  kubeconfigPath?: string;
  /** Budget for etcd + kube-apiserver to become ready. Default 120 s (a loaded 2-core machine). */
  startTimeoutMs?: number;
  /** Time between SIGTERM and SIGKILL on stop. Default 10 s. */
  stopGraceMs?: number;
  /**
   * Stop on SIGINT/SIGTERM, then let the signal take its default course when nobody else
   * listens for it. Default true; a caller with its own handler (the CLI) passes false. A
   * synchronous clean-up on process exit is always registered.
   */
  handleSignals?: boolean;
  /** Progress lines (human text). Default: none. */
  log?: (line: string) => void;
  /**
   * Where the work directory and etcd's data directory are made. Default: the system temp
   * directory for the first and /dev/shm (when it exists) for the second. A caller that checks
   * for leftovers passes a directory of its own, which no other control plane shares.
   */
  tempRoot?: string;
  /**
   * Also run kube-controller-manager and kube-scheduler (Deployments, Jobs, EndpointSlices,
   * garbage collection, namespace deletion, scheduling), and admit Pods through the
   * ServiceAccount plugin (token volume injected, as in a real cluster). Default false: without a
   * node nothing would run the pods they make.
   */
  controllers?: boolean;
  /** --service-cluster-ip-range; its first address is the `kubernetes` Service. Default 10.0.0.0/24. */
  serviceClusterIpRange?: string;
  /**
   * --service-account-jwks-uri: the `jwks_uri` of the issuer's discovery document
   * (/.well-known/openid-configuration). Default: none, and kube-apiserver names its own address,
   * https://127.0.0.1:<port>/openid/v1/jwks, which a pod (its own network namespace) cannot reach.
   * serviceAccountJwksInCluster is `https://kubernetes.default.svc/openid/v1/jwks`, the same keys
   * through the `kubernetes` Service, for in-cluster verifiers of ServiceAccount tokens (Knative
   * Eventing's OIDC: test/integration/knative/event-policy.test.ts).
   */
  serviceAccountJwksUri?: string;
  /**
   * --advertise-address: the address of the `kubernetes` Service's endpoint. Default 127.0.0.1,
   * which a pod cannot reach; the real node (local/kubelet-node) relays kubeletNodeApiAddress to
   * kube-apiserver, so a control plane for its pods advertises that. kube-apiserver still binds
   * 127.0.0.1 only; its serving certificate names both.
   */
  advertiseAddress?: string;
}

/** The control plane's own CA and the files a kubelet needs to trust and be trusted. */
export interface ControlPlanePki {
  /** Trusted by kube-apiserver for client certificates and for kubelets' serving certificates. */
  ca: CertificateAuthority;
  /** kube-apiserver's serving chain: what pods trust (the kube-root-ca.crt ConfigMap holds it). */
  apiserverCaFile: string;
  /** Directory a node may issue its certificates into (removed on stop). */
  dir: string;
}

export interface ControlPlaneProcessInfo {
  pid: number;
  logPath: string;
}

export interface ControlPlane {
  /** Admin client configuration (token in group system:masters). */
  kubeConfig: KubeConfig;
  /** A kubeconfig file for kubectl and for other processes. */
  kubeconfigPath: string;
  /** https://127.0.0.1:<port> */
  server: string;
  /** http://127.0.0.1:<port> */
  etcdUrl: string;
  /** The directory holding the binaries. */
  assetsDir: string;
  binaries: ControlPlaneBinaries;
  access: AdminAccess;
  processes: {
    etcd: ControlPlaneProcessInfo;
    kubeApiserver: ControlPlaneProcessInfo;
    kubeControllerManager?: ControlPlaneProcessInfo;
    kubeScheduler?: ControlPlaneProcessInfo;
  };
  /** Whether kube-controller-manager and kube-scheduler run (options.controllers). */
  controllers: boolean;
  serviceClusterIpRange: string;
  /** --advertise-address (options.advertiseAddress). */
  advertiseAddress: string;
  pki: ControlPlanePki;
  /** Temporary directories (credentials, certificates, logs; etcd's data): removed on stop. */
  workDir: string;
  etcdDataDir: string;
  /** Milliseconds from the call to etcd healthy, to kube-apiserver ready, to the CRDs served. */
  timings: {
    etcdReadyMs: number;
    apiserverReadyMs: number;
    controllersReadyMs?: number;
    crdsReadyMs?: number;
  };
  /**
   * Resolves, with a description, as soon as any of its processes has exited: a crash, or stop().
   * Long-running callers (the CLI, the local stack) watch it to notice a dead control plane.
   */
  exited: Promise<string>;
  installCrds(inputs: CrdInput[], options?: { timeoutMs?: number }): Promise<InstalledCrd[]>;
  /** Stops its processes and removes the temporary files. Idempotent. */
  stop(): Promise<void>;
}

const serviceAccountIssuer = 'https://kubernetes.default.svc';

/** The issuer's keys as a pod reaches them: through the `kubernetes` Service (see serviceAccountJwksUri). */
export const serviceAccountJwksInCluster = `${serviceAccountIssuer}/openid/v1/jwks`;

/** A fresh data directory for etcd, in memory when /dev/shm exists. */
function etcdDataRoot(tempRoot: string | undefined): string {
  const base = tempRoot ?? (existsSync('/dev/shm') ? '/dev/shm' : tmpdir());
  return mkdtempSync(join(base, 'bpa-etcd-'));
}

/**
 * Starts etcd and kube-apiserver (and, with `controllers`, kube-controller-manager and
 * kube-scheduler) on free 127.0.0.1 ports with generated credentials, waits until all are ready,
 * writes a kubeconfig and installs the requested CRDs.
 */
export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const started = Date.now();
  const log = options.log ?? (() => undefined);
  const startTimeoutMs = options.startTimeoutMs ?? 120_000;
  const binaries =
    options.binaries ?? (await locateBinaries({ onBuildOutput: (text) => log(text.trimEnd()) }));
  log(`binaries from ${binaries.source}: ${binaries.assetsDir}`);

  const tempDir = mkdtempSync(join(options.tempRoot ?? tmpdir(), 'bpa-control-plane-'));
  const dataDir = etcdDataRoot(options.tempRoot);
  const running: ManagedProcess[] = [];
  let stopped = false;

  const removeFiles = () => {
    rmSync(tempDir, { recursive: true, force: true });
    rmSync(dataDir, { recursive: true, force: true });
  };
  const killNowAndClean = () => {
    for (const child of running) child.killNow();
    removeFiles();
  };
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    process.off('exit', killNowAndClean);
    for (const signal of signals) process.off(signal, onSignal);
    // kube-apiserver first: it needs etcd to shut down cleanly.
    for (const child of [...running].reverse()) await child.stop(options.stopGraceMs ?? 10_000);
    removeFiles();
  };
  const signals: NodeJS.Signals[] = options.handleSignals === false ? [] : ['SIGINT', 'SIGTERM'];
  const onSignal = (signal: NodeJS.Signals) => {
    void stop().finally(() => {
      // Nobody else handles it: die of the signal, as the process would have without us.
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    });
  };
  process.on('exit', killNowAndClean);
  for (const signal of signals) process.on(signal, onSignal);

  const failStart = async (what: string, error: unknown): Promise<never> => {
    const tails = running.map(
      (child) => `--- ${child.name} (last lines of its log) ---\n${child.logTail(30)}`,
    );
    await stop();
    const message = describeError(error).message;
    throw new BpaError('ControlPlaneStartFailed', [`${what}: ${message}`, ...tails].join('\n'), 'internal');
  };
  const exitedEarly = (child: ManagedProcess) => () => {
    const exit = child.exit();
    return exit ? `${child.name} exited (code ${exit.code}, signal ${exit.signal})` : undefined;
  };

  const [etcdClientPort, etcdPeerPort, apiserverPort] = await freeLoopbackPorts(3);
  const etcdUrl = `http://127.0.0.1:${etcdClientPort}`;
  const etcdPeerUrl = `http://127.0.0.1:${etcdPeerPort}`;
  const etcd = startManagedProcess(
    'etcd',
    binaries.etcd,
    [
      '--name=bpa',
      `--data-dir=${join(dataDir, 'etcd')}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=${etcdPeerUrl}`,
      `--initial-advertise-peer-urls=${etcdPeerUrl}`,
      `--initial-cluster=bpa=${etcdPeerUrl}`,
      '--unsafe-no-fsync=true',
      '--log-level=warn',
    ],
    join(tempDir, 'etcd.log'),
  );
  running.push(etcd);
  try {
    await waitFor(async () => ((await etcdHealthy(etcdUrl)) ? true : undefined), {
      what: `etcd on ${etcdUrl}`,
      timeoutMs: startTimeoutMs,
      abortIf: exitedEarly(etcd),
    });
  } catch (error) {
    return failStart('etcd did not become healthy', error);
  }
  const etcdReadyMs = Date.now() - started;
  log(`etcd healthy on ${etcdUrl} after ${etcdReadyMs} ms`);

  const credentials = writeCredentials(tempDir);
  const certDir = join(tempDir, 'certs');
  const pkiDir = join(tempDir, 'pki');
  mkdirSync(pkiDir);
  const ca = createCertificateAuthority(pkiDir);
  // kube-apiserver presents it to kubelets (logs, exec); O=system:masters as kubeadm does.
  const kubeletClient = issueCertificate(ca, pkiDir, {
    name: 'apiserver-kubelet-client',
    commonName: 'kube-apiserver-kubelet-client',
    organization: 'system:masters',
    usage: 'client',
  });
  const serviceClusterIpRange = options.serviceClusterIpRange ?? '10.0.0.0/24';
  const withControllers = options.controllers ?? false;
  const server = `https://127.0.0.1:${apiserverPort}`;
  const advertiseAddress = options.advertiseAddress ?? '127.0.0.1';
  const kubeApiserver = startManagedProcess(
    'kube-apiserver',
    binaries.kubeApiserver,
    [
      `--etcd-servers=${etcdUrl}`,
      '--bind-address=127.0.0.1',
      // Without it the server looks for a default route, and there is none on an offline machine.
      `--advertise-address=${advertiseAddress}`,
      // For the real node's pods: a webhook (Knative's) is called on its pod's IP, which the machine
      // routes to the node; a ClusterIP is kube-proxy's, inside the node, and from here would take
      // the machine's default route off the machine.
      ...(options.advertiseAddress ? ['--enable-aggregator-routing=true'] : []),
      `--secure-port=${apiserverPort}`,
      `--cert-dir=${certDir}`,
      `--service-cluster-ip-range=${serviceClusterIpRange}`,
      '--allow-privileged=true',
      // With controllers, Pods get the projected kube-api-access volume as in any cluster;
      // without them nobody creates the `default` ServiceAccount, and the plugin would refuse every Pod.
      ...(withControllers ? [] : ['--disable-admission-plugins=ServiceAccount']),
      `--client-ca-file=${ca.certFile}`,
      `--kubelet-client-certificate=${kubeletClient.certFile}`,
      `--kubelet-client-key=${kubeletClient.keyFile}`,
      `--kubelet-certificate-authority=${ca.certFile}`,
      '--kubelet-preferred-address-types=InternalIP,Hostname',
      '--authorization-mode=RBAC',
      `--token-auth-file=${credentials.tokenFile}`,
      `--service-account-issuer=${serviceAccountIssuer}`,
      ...(options.serviceAccountJwksUri
        ? [`--service-account-jwks-uri=${options.serviceAccountJwksUri}`]
        : []),
      `--service-account-key-file=${credentials.serviceAccountKeyFile}`,
      `--service-account-signing-key-file=${credentials.serviceAccountKeyFile}`,
    ],
    join(tempDir, 'kube-apiserver.log'),
  );
  running.push(kubeApiserver);
  const certFile = join(certDir, 'apiserver.crt');
  let caPem = '';
  try {
    await waitFor(
      async () => {
        // kube-apiserver writes its self-signed serving chain before it listens.
        if (!caPem && existsSync(certFile)) caPem = readFileSync(certFile, 'utf8');
        if (!caPem) throw new Error(`${certFile} not written yet`);
        return (await apiserverReady(server, caPem, credentials.adminToken)) ? true : undefined;
      },
      {
        what: `kube-apiserver on ${server}`,
        timeoutMs: startTimeoutMs,
        intervalMs: 200,
        abortIf: () => exitedEarly(kubeApiserver)() ?? exitedEarly(etcd)(),
      },
    );
  } catch (error) {
    return failStart('kube-apiserver did not become ready', error);
  }
  const apiserverReadyMs = Date.now() - started;
  log(`kube-apiserver ready on ${server} after ${apiserverReadyMs} ms`);

  const access: AdminAccess = { server, caPem, token: credentials.adminToken };
  const kubeConfig = adminKubeConfig(access);
  const kubeconfigPath = options.kubeconfigPath ?? join(tempDir, 'kubeconfig');
  writeKubeconfigFile(kubeconfigPath, access);

  let controllers: ControllerProcess[] = [];
  let controllersReadyMs: number | undefined;
  if (withControllers) {
    // Their own copy: the caller's kubeconfig file is the caller's to move or delete.
    const controllersKubeconfig = join(tempDir, 'controllers.kubeconfig');
    writeKubeconfigFile(controllersKubeconfig, access);
    controllers = await startControllers({
      binaries,
      kubeconfigPath: controllersKubeconfig,
      serviceAccountKeyFile: credentials.serviceAccountKeyFile,
      rootCaFile: certFile,
      clusterSigning: ca,
      serviceClusterIpRange,
      workDir: tempDir,
    });
    running.push(...controllers.map((controller) => controller.process));
    try {
      await waitControllersHealthy(controllers, {
        timeoutMs: startTimeoutMs,
        abortIf: () => running.map((child) => exitedEarly(child)()).find(Boolean),
      });
    } catch (error) {
      return failStart('kube-controller-manager or kube-scheduler did not become healthy', error);
    }
    controllersReadyMs = Date.now() - started;
    log(`kube-controller-manager and kube-scheduler healthy after ${controllersReadyMs} ms`);
  }
  const [manager, scheduler] = controllers.map((controller) => controller.process);

  const controlPlane: ControlPlane = {
    kubeConfig,
    kubeconfigPath,
    server,
    etcdUrl,
    assetsDir: binaries.assetsDir,
    binaries,
    access,
    processes: {
      etcd: { pid: etcd.pid, logPath: etcd.logPath },
      kubeApiserver: { pid: kubeApiserver.pid, logPath: kubeApiserver.logPath },
      ...(manager ? { kubeControllerManager: { pid: manager.pid, logPath: manager.logPath } } : {}),
      ...(scheduler ? { kubeScheduler: { pid: scheduler.pid, logPath: scheduler.logPath } } : {}),
    },
    controllers: withControllers,
    serviceClusterIpRange,
    advertiseAddress,
    pki: { ca, apiserverCaFile: certFile, dir: pkiDir },
    workDir: tempDir,
    etcdDataDir: dataDir,
    timings: { etcdReadyMs, apiserverReadyMs, controllersReadyMs },
    exited: Promise.race(
      running.map((child) =>
        child.exited.then((exit) => `${child.name} exited (code ${exit.code}, signal ${exit.signal})`),
      ),
    ),
    installCrds: (inputs, crdOptions) => installCrds(kubeConfig, inputs, crdOptions),
    stop,
  };
  if (options.crds && options.crds.length > 0) {
    try {
      const installed = await controlPlane.installCrds(options.crds);
      controlPlane.timings.crdsReadyMs = Date.now() - started;
      log(`${installed.length} CRDs served after ${controlPlane.timings.crdsReadyMs} ms`);
    } catch (error) {
      return failStart('installing CRDs failed', error);
    }
  }
  return controlPlane;
}
