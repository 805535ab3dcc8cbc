/**
 * `bpa dev --engine knative` as a real process on the real node (kubelet + containerd + kube-proxy,
 * local/kubelet-node): Knative Eventing from its images, the functions as pods of their images,
 * manifests/' Broker, Triggers and ApiServerSources; a Provisioning applied with kubectl goes
 * through real Knative (ApiServerSource -> MT broker -> host-lookup -> inventory-render ->
 * kud-job-launch, each a pod) until its KUD Job exists, host-lookup reading the lease file given
 * with --leases from the ConfigMap bpa dev copies it into. SIGINT stops it all. Needs root.
 */
import { describe, expect, it } from '@jest/globals';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
const notRoot = process.getuid?.() !== 0;
if (notRoot) process.stderr.write('[dev-knative] skipping: the real node needs root\n');
// Skipped only without root: the real node needs namespaces, cgroups and mounts (CI runs as root,
// so there it always runs); the reason is also printed on stderr.
const describeAsRoot = notRoot ? describe.skip : describe;

const mac = '52:54:00:e2:e0:11';
/** bpa-config's BMH_NAMESPACE as shipped; `default` is onboarded by bpa dev. */
const bmhNamespace = 'metal3';
const clusterName = 'dev-knative-cluster';
const functionsNamespace = 'bpa-system';

function isolatedEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'info' };
  for (const name of Object.keys(env))
    if (name === 'KUBECONFIG' || name.startsWith('BPA_TEST_')) delete env[name];
  return env;
}

describeAsRoot('bpa dev --engine knative (a real process, the real node)', () => {
  it('runs Knative and the functions from their images and turns a Provisioning into a KUD Job', async () => {
    const cli = await builtCli();
    const dir = mkdtempSync(join(tmpdir(), 'bpa-dev-knative-e2e-'));
    const kubeconfig = join(dir, 'kubeconfig');
    const leases = join(dir, 'dhcpd.leases');
    writeFileSync(leases, `lease 192.0.2.31 {\n  binding state active;\n  hardware ethernet ${mac};\n}\n`);
    const child = spawn(
      process.execPath,
      [
        cli,
        'dev',
        '--engine',
        'knative',
        '--kubeconfig-out',
        kubeconfig,
        '--port',
        String(await freeLoopbackPort()),
        '--leases',
        leases,
      ],
      { cwd: repoRoot(), env: isolatedEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const output = new ProcessOutput(child);
    const exited = once(child, 'exit');
    const kubectl = (...args: string[]) => run('kubectl', ['--kubeconfig', kubeconfig, ...args]);
    const jsonOf = async (...args: string[]) =>
      JSON.parse((await kubectl(...args, '-o', 'json')).stdout) as {
        items: {
          metadata: { name: string };
          spec: { containers: { image: string; securityContext?: Record<string, unknown> }[] };
          status: { phase: string };
        }[];
      };
    try {
      await output.waitFor(/^ready: /m, 600_000);
      expect(output.stdout).toMatch(/node\s+bpa-node \(real: containerd, kubelet, kube-proxy, CoreDNS\)/);
      expect(output.stdout).toMatch(/broker\s+http:\/\/10\.248\.\d+\.\d+:8080\/bpa-system\/default/);
      expect(output.stdout).toMatch(/live view\s+http:\/\/10\.249\.\d+\.1:\d+\//);
      // Knative's components and the functions: pods of their images by digest.
      for (const pod of (await jsonOf('get', 'pods', '-n', 'knative-eventing')).items)
        expect(pod.spec.containers[0]?.image).toMatch(
          /^localhost\/bpa-functions\/knative-eventing-[a-z-]+@sha256:/,
        );
      const functions = (await jsonOf('get', 'pods', '-n', functionsNamespace)).items;
      for (const name of [
        'host-lookup',
        'inventory-render',
        'kud-job-launch',
        'software-install',
        'dead-letter',
      ]) {
        const pod = functions.find((p) => p.metadata.name.startsWith(`${name}-`));
        expect(pod?.status.phase).toBe('Running');
        expect(pod?.spec.containers[0]?.image).toMatch(/^localhost\/bpa-functions\/[a-z-]+@sha256:/);
      }
      const hostLookup = functions.find((p) => p.metadata.name.startsWith('host-lookup-'));
      expect(hostLookup?.spec.containers[0]?.securityContext).toMatchObject({ readOnlyRootFilesystem: true });

      const applyAll = async (objects: readonly object[]) => {
        const apply = spawn('kubectl', ['--kubeconfig', kubeconfig, 'apply', '-f', '-'], {
          stdio: ['pipe', 'pipe', 'pipe'],
        });
        apply.stdin.end(objects.map((r) => stringify(r)).join('---\n'));
        const [code] = (await once(apply, 'exit')) as [number];
        expect(code).toBe(0);
      };
      const key = generateEd25519KeyPair();
      await applyAll([
        {
          apiVersion: 'metal3.io/v1alpha1',
          kind: 'BareMetalHost',
          metadata: { name: 'server-1', namespace: bmhNamespace },
          spec: { online: true, bootMACAddress: mac },
        },
        {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'ssh-key-secret', namespace: functionsNamespace },
          stringData: { id_rsa: key.private, 'id_rsa.pub': key.public },
        },
      ]);
      await kubectl(
        'patch',
        'baremetalhost',
        'server-1',
        '-n',
        bmhNamespace,
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
      await applyAll([
        {
          apiVersion: 'bpa.akraino.org/v1alpha1',
          kind: 'Provisioning',
          metadata: { name: clusterName, namespace: 'default', labels: { cluster: clusterName } },
          spec: { masters: [{ 'master-1': { 'mac-address': mac } }] },
        },
      ]);
      let job: { metadata: { labels: Record<string, string> } } | undefined;
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
        if (result) job = JSON.parse(result.stdout) as typeof job;
        else await new Promise((resolve) => setTimeout(resolve, 500));
      }
      expect(job?.metadata.labels).toMatchObject({ cluster: clusterName });
      // host-lookup found the host's address in the lease file, through the ConfigMap.
      const status = JSON.parse(
        (await kubectl('get', 'provisioning', clusterName, '-n', 'default', '-o', 'json')).stdout,
      ) as { status?: { conditions?: { type: string; message?: string }[] } };
      expect(status.status?.conditions?.find((c) => c.type === 'HostsResolved')?.message).toMatch(
        /1 from dhcp-leases/,
      );
    } finally {
      child.kill('SIGINT');
    }
    const [code] = (await exited) as [number | null];
    expect(output.stdout).toMatch(/bpa dev: stopped/);
    expect(code).toBe(0);
    await expect(
      run('kubectl', ['--kubeconfig', kubeconfig, 'get', 'ns', '--request-timeout=3s']),
    ).rejects.toThrow();
    rmSync(dir, { recursive: true, force: true });
  }, 900_000);
});
