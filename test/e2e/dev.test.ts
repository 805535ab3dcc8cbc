/**
 * `bpa dev` as a real process on the one-machine cluster (real etcd, kube-apiserver,
 * kube-controller-manager, kube-scheduler; the real node, local/kubelet-node: kubelet, containerd,
 * kube-proxy, with the project's images), driven with kubectl: a Provisioning becomes a KUD Job
 * run by the real Job controller, whose container, the kud-stand-in image (the KUD installer
 * stand-in), fails on the host's documentation address (never reached: the node has no route off
 * the machine). The broker is the embedded one (OUR IMITATION of Knative Eventing's broker:
 * `bpa dev --engine knative` runs the real one, tested by the chain suites on both engines,
 * test/integration/chain). Needs root.
 */
import { describe, expect, it } from '@jest/globals';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { freeLoopbackPort } from '../../local/control-plane/free-port.js';
import { repoRoot } from '../../local/control-plane/repo-root.js';
import { builtCli } from './support/built-cli.js';
import { ProcessOutput } from './support/process-output.js';
import { generateEd25519KeyPair } from '../../local/lab/ssh-keys.js';

const run = promisify(execFile);

/**
 * Env of the child: no test cluster, so `bpa dev` starts its own one-machine cluster (control
 * plane, Kubernetes' controllers and the real node; needs root).
 */
function isolatedEnv(): NodeJS.ProcessEnv {
  // host-lookup reads BareMetalHosts from BMH_NAMESPACE only (shipped default: metal3).
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'info', BMH_NAMESPACE: namespace };
  for (const name of Object.keys(env))
    if (name === 'KUBECONFIG' || name.startsWith('BPA_TEST_')) delete env[name];
  return env;
}

const portIsFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

const mac = '52:54:00:e2:e0:01';
const namespace = 'dev-e2e';
const clusterName = 'dev-e2e-cluster';
/** Where the KUD Job runs (FUNCTIONS_NAMESPACE as shipped). */
const functionsNamespace = 'bpa-system';

const resources = [
  { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } },
  {
    apiVersion: 'metal3.io/v1alpha1',
    kind: 'BareMetalHost',
    metadata: { name: 'server-1', namespace },
    spec: { online: true, bootMACAddress: mac },
  },
  // The KUD Job mounts the operator's key of the functions' namespace, never a tenant's (contract
  // section 12; any key: the host's address is a documentation one, never reached).
  {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'ssh-key-secret', namespace: functionsNamespace },
    stringData: (() => {
      const key = generateEd25519KeyPair();
      return { id_rsa: key.private, 'id_rsa.pub': key.public };
    })(),
  },
  {
    apiVersion: 'bpa.akraino.org/v1alpha1',
    kind: 'Provisioning',
    metadata: { name: clusterName, namespace, labels: { cluster: clusterName } },
    spec: { masters: [{ 'master-1': { 'mac-address': mac } }] },
  },
];

describe('bpa dev (a real process)', () => {
  it('starts the stack on the node, turns a Provisioning applied with kubectl into a KUD Job that really runs, and stops cleanly on SIGINT', async () => {
    const cli = await builtCli();
    const dir = mkdtempSync(join(tmpdir(), 'bpa-dev-e2e-'));
    const kubeconfig = join(dir, 'kubeconfig');
    const leases = join(dir, 'dhcpd.leases');
    writeFileSync(leases, `lease 192.0.2.21 {\n  binding state active;\n  hardware ethernet ${mac};\n}\n`);
    const port = await freeLoopbackPort();
    const child = spawn(
      process.execPath,
      [cli, 'dev', '--kubeconfig-out', kubeconfig, '--port', String(port), '--leases', leases],
      { cwd: repoRoot(), env: isolatedEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const output = new ProcessOutput(child);
    const exited = once(child, 'exit');
    try {
      await output.waitFor(/^ready: /m, 240_000);
      // On the one-machine cluster: the controllers and the node run.
      expect(output.stdout).toMatch(/kube-controller-manager\s+pid \d+/);
      expect(output.stdout).toMatch(
        /node\s+bpa-node \(real: containerd, kubelet, kube-proxy, CoreDNS\) at 10\.249\.\d+\.2: pods in 10\.248\.\d+\.0\/24/,
      );
      expect(output.stdout).toContain(`broker`);
      expect(output.stdout).toMatch(new RegExp(`http://127\\.0\\.0\\.1:\\d+/bpa-system/default`));
      expect(output.stdout).toMatch(/live view\s+http:\/\/127\.0\.0\.1:\d+\//);
      for (const name of ['host-lookup', 'inventory-render', 'kud-job-launch', 'software-install'])
        expect(output.stdout).toMatch(new RegExp(`${name}\\s+http://127\\.0\\.0\\.1:\\d+`));
      expect(output.stdout).toMatch(new RegExp(`kubeconfig\\s+${kubeconfig}`));

      const kubectl = (...args: string[]) => run('kubectl', ['--kubeconfig', kubeconfig, ...args]);
      // A namespace other than `default` is onboarded as docs/deploy.md says, before its resources.
      const namespaceFile = join(dir, 'namespace.yaml');
      writeFileSync(namespaceFile, stringify(resources[0]));
      await kubectl('apply', '-f', namespaceFile);
      await kubectl('apply', '-n', namespace, '-k', join(repoRoot(), 'manifests', 'tenant'));
      const applyAll = async (objects: readonly object[]) => {
        const apply = spawn('kubectl', ['--kubeconfig', kubeconfig, 'apply', '-f', '-'], {
          stdio: ['pipe', 'pipe', 'pipe'],
        });
        apply.stdin.end(objects.map((r) => stringify(r)).join('---\n'));
        const [applyCode] = (await once(apply, 'exit')) as [number];
        expect(applyCode).toBe(0);
      };
      await applyAll(resources.slice(0, -1));
      // No Metal3 runs here: the host's status says what Metal3 shows for a host whose OS was
      // installed by someone else, which host-lookup waits for before KUD (contract section 13).
      await kubectl(
        'patch',
        'baremetalhost',
        'server-1',
        '-n',
        namespace,
        '--subresource=status',
        '--type=merge',
        '-p',
        JSON.stringify({
          status: {
            errorMessage: '',
            hardwareProfile: 'unknown',
            operationalStatus: 'OK',
            poweredOn: true,
            provisioning: { ID: 'e2e-server-1', state: 'externally provisioned', image: { url: '' } },
          },
        }),
      );
      await applyAll(resources.slice(-1));

      let job: { metadata: { labels: Record<string, string> }; spec: { backoffLimit: number } } | undefined;
      for (let i = 0; i < 240 && !job; i++) {
        const result = await kubectl(
          'get',
          'job',
          `kud-${clusterName}`,
          '-n',
          functionsNamespace,
          '-o',
          'json',
        ).catch(() => undefined);
        if (result) job = JSON.parse(result.stdout);
        else await new Promise((resolve) => setTimeout(resolve, 500));
      }
      expect(job?.metadata.labels).toMatchObject({
        cluster: clusterName,
        'app.kubernetes.io/managed-by': 'bpa-functions',
      });
      expect(job?.spec.backoffLimit).toBe(0);
      // One console line per delivery: type, subject, trigger, status, latency.
      await output.waitFor(
        /event\s+inventory\.rendered\s+\S+ → kud-job-launch-inventory-rendered\s+200\s+\d+ ms/,
        30_000,
      );
      expect(output.stdout).toMatch(
        new RegExp(
          `event\\s+knative\\.apiserver\\.resource\\.add\\s+/apis/bpa\\.akraino\\.org/v1alpha1/namespaces/${namespace}/provisionings/${clusterName} → host-lookup-provisioning-add\\s+\\d{3}\\s+\\d+ ms`,
        ),
      );
      // The Job ran on the node: its host (192.0.2.21, no route to it) never answered, so the
      // stand-in exited 1 and Kubernetes' Job controller failed the Job; kubectl logs shows why.
      let failed = '';
      for (let i = 0; i < 240 && failed !== 'True'; i++) {
        failed = (
          await kubectl(
            'get',
            'job',
            `kud-${clusterName}`,
            '-n',
            functionsNamespace,
            '-o',
            `jsonpath={.status.conditions[?(@.type=="Failed")].status}`,
          )
        ).stdout;
        if (failed !== 'True') await new Promise((resolve) => setTimeout(resolve, 500));
      }
      expect(failed).toBe('True');
      const logs = (await kubectl('logs', `job/kud-${clusterName}`, '-n', functionsNamespace)).stdout;
      expect(logs).toContain('[kud-installer stand-in] FAILED: host(s) did not answer over SSH: master-1');
    } finally {
      child.kill('SIGINT');
    }
    const [code] = (await exited) as [number | null];
    expect(output.stdout).toMatch(/bpa dev: stopped/);
    expect(code).toBe(0);
    // Everything it started is gone: the broker's port is free and the API server is down.
    expect(await portIsFree(port)).toBe(true);
    await expect(
      run('kubectl', ['--kubeconfig', kubeconfig, 'get', 'ns', '--request-timeout=3s']),
    ).rejects.toThrow();
    rmSync(dir, { recursive: true, force: true });
  }, 300_000);
});
