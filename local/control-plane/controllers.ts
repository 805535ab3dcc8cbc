import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ControlPlaneBinaries } from './assets.js';
import { freeLoopbackPorts } from './free-port.js';
import type { ManagedProcess } from './managed-process.js';
import { startManagedProcess } from './managed-process.js';
import type { CertificateAuthority } from './pki.js';
import { probe } from './probes.js';
import { waitFor } from './wait.js';

/** What kube-controller-manager and kube-scheduler are started with. */
export interface ControllersInput {
  binaries: Pick<ControlPlaneBinaries, 'kubeControllerManager' | 'kubeScheduler'>;
  /** A kubeconfig both use to reach kube-apiserver (and to delegate authn/authz of their ports). */
  kubeconfigPath: string;
  /** The key kube-apiserver verifies service-account tokens with: the controllers sign with it too. */
  serviceAccountKeyFile: string;
  /** The CA pods trust for kube-apiserver: published as ConfigMap kube-root-ca.crt in every namespace. */
  rootCaFile: string;
  /** Signs CertificateSigningRequests (kubernetes.io/kube-apiserver-client and friends). */
  clusterSigning: CertificateAuthority;
  serviceClusterIpRange: string;
  workDir: string;
}

/**
 * Starts Kubernetes' own controllers (Deployments, ReplicaSets, Jobs, EndpointSlices, the garbage
 * collector, namespace deletion, service accounts, root CA publisher...) and the scheduler, each
 * on a free 127.0.0.1 secure port, without leader election (one replica). Resolves with the two
 * processes; call waitControllersHealthy before relying on them.
 */
export interface ControllerProcess {
  process: ManagedProcess;
  /** https://127.0.0.1:<port>/healthz */
  healthzUrl: string;
}

export async function startControllers(input: ControllersInput): Promise<ControllerProcess[]> {
  const [managerPort, schedulerPort] = await freeLoopbackPorts(2);
  const delegated = [
    `--kubeconfig=${input.kubeconfigPath}`,
    `--authentication-kubeconfig=${input.kubeconfigPath}`,
    `--authorization-kubeconfig=${input.kubeconfigPath}`,
    '--bind-address=127.0.0.1',
    '--leader-elect=false',
  ];
  const certDir = (name: string) => {
    const dir = join(input.workDir, `${name}-certs`);
    mkdirSync(dir, { recursive: true });
    return dir;
  };
  const manager = startManagedProcess(
    'kube-controller-manager',
    input.binaries.kubeControllerManager,
    [
      ...delegated,
      `--secure-port=${managerPort}`,
      `--cert-dir=${certDir('kube-controller-manager')}`,
      `--service-account-private-key-file=${input.serviceAccountKeyFile}`,
      `--root-ca-file=${input.rootCaFile}`,
      // Each controller acts as its own service account (RBAC as in a real cluster).
      '--use-service-account-credentials=true',
      `--cluster-signing-cert-file=${input.clusterSigning.certFile}`,
      `--cluster-signing-key-file=${input.clusterSigning.keyFile}`,
      `--service-cluster-ip-range=${input.serviceClusterIpRange}`,
      // Nodes bring their own pod CIDR; no cloud provider.
      '--allocate-node-cidrs=false',
    ],
    join(input.workDir, 'kube-controller-manager.log'),
  );
  const scheduler = startManagedProcess(
    'kube-scheduler',
    input.binaries.kubeScheduler,
    [...delegated, `--secure-port=${schedulerPort}`, `--cert-dir=${certDir('kube-scheduler')}`],
    join(input.workDir, 'kube-scheduler.log'),
  );
  return [
    { process: manager, healthzUrl: `https://127.0.0.1:${managerPort}/healthz` },
    { process: scheduler, healthzUrl: `https://127.0.0.1:${schedulerPort}/healthz` },
  ];
}

/** Waits for GET /healthz = 200 on each controller's secure port (self-signed: not verified). */
export async function waitControllersHealthy(
  controllers: ControllerProcess[],
  options: { timeoutMs: number; abortIf: () => string | undefined },
): Promise<void> {
  for (const { process: child, healthzUrl: url } of controllers) {
    await waitFor(
      async () => {
        const { status, body } = await probe(url, { insecure: true });
        if (status !== 200) throw new Error(`${url} answered ${status}: ${body.slice(0, 200)}`);
        return true;
      },
      {
        what: `${child.name} on ${url}`,
        timeoutMs: options.timeoutMs,
        intervalMs: 200,
        abortIf: options.abortIf,
      },
    );
  }
}
