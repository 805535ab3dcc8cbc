/**
 * The real node must leave nothing behind when its launcher is killed hard (SIGKILL runs no exit
 * handler): a runner process starts a control plane and a node with a running pod, is SIGKILLed,
 * and within seconds the node's processes (containerd, kubelet, kube-proxy, the runc shims that
 * PID 1 inherited, the pod's container), its cgroups, its veth and its directory are gone. Root only.
 */
import { spawn } from 'node:child_process';
import { readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { leftovers, pinMountNamespace, type CleanupTarget } from '../../../local/kubelet-node/index.js';
import { repoRoot } from '../../../local/control-plane/repo-root.js';
import { builtCli } from '../../e2e/support/built-cli.js';
import { until } from '../../support/processes.js';

const notRoot = process.getuid?.() !== 0;
if (notRoot) process.stderr.write('[kubelet-node] skipping the crash clean-up: the real node needs root\n');
// Skipped only without root: the real node needs namespaces, cgroups and mounts (CI runs as root,
// so there it always runs); the reason is also printed on stderr.
const describeAsRoot = notRoot ? describe.skip : describe;

describeAsRoot('the real node after its launcher is SIGKILLed', () => {
  it('removes its processes, cgroups, veth and directory', async () => {
    await builtCli(); // dist/ current
    const dist = (...path: string[]) => pathToFileURL(join(repoRoot(), 'dist', ...path)).href;
    const runnerPath = join(repoRoot(), 'dist', `kubelet-node-crash-runner-${process.pid}.mjs`);
    writeFileSync(
      runnerPath,
      `import { mkdtempSync } from 'node:fs';
import { CoreV1Api } from '@kubernetes/client-node';
import { startControlPlane, waitFor } from ${JSON.stringify(dist('local', 'control-plane', 'index.js'))};
import { startKubeletNode } from ${JSON.stringify(dist('local', 'kubelet-node', 'index.js'))};
import { busyboxImage, writeBusyboxImage } from ${JSON.stringify(dist('local', 'kubelet-node', 'index.js'))};
const controlPlane = await startControlPlane({ controllers: true, handleSignals: false });
const image = writeBusyboxImage(mkdtempSync('/tmp/kubelet-node-crash-'));
const node = await startKubeletNode({ controlPlane, images: [image.path] });
const core = controlPlane.kubeConfig.makeApiClient(CoreV1Api);
const namespace = 'default';
await waitFor(async () => (await core.readNamespacedServiceAccount({ name: 'default', namespace })) ? true : undefined,
  { what: 'the default ServiceAccount', timeoutMs: 30000 });
await core.createNamespacedPod({ namespace, body: { metadata: { name: 'sleeper' }, spec: {
  containers: [{ name: 'main', image: busyboxImage, imagePullPolicy: 'Never', command: ['sleep', '300'] }] } } });
await waitFor(async () => (await core.readNamespacedPod({ name: 'sleeper', namespace })).status?.phase === 'Running' ? true : undefined,
  { what: 'pod sleeper Running', timeoutMs: 60000 });
console.log(JSON.stringify({ ...node.cleanupTarget, sandboxPid: node.sandboxPid }));
setInterval(() => {}, 1000);
`,
    );
    const runner = spawn(process.execPath, [runnerPath], { stdio: ['ignore', 'pipe', 'inherit'] });
    let pin: { close(): void } | undefined;
    try {
      let out = '';
      runner.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      await until(() => out.includes('\n'), 'the runner to start the node and its pod', 240_000);
      const target = JSON.parse(out.split('\n')[0] ?? '{}') as CleanupTarget & { sandboxPid: number };
      // Held so that the name keeps meaning this node's namespace after its processes die
      // (cleanup.ts: the next namespace on the machine would take it).
      pin = pinMountNamespace(target.sandboxPid, target.mountNamespace);
      const before = leftovers(target);
      // containerd, kubelet, kube-proxy, the holder and two shims (sandbox, container) at least.
      expect(before.filter((line) => line.startsWith('process ')).length).toBeGreaterThanOrEqual(5);
      expect(before.filter((line) => line.startsWith('cgroup ')).length).toBeGreaterThan(0);
      expect(before).toContain(`link ${target.hostInterface}`);

      runner.kill('SIGKILL');
      await until(() => leftovers(target).length === 0, 'the crash clean-up', 30_000);
    } finally {
      pin?.close();
      runner.kill('SIGKILL');
      rmSync(runnerPath, { force: true });
    }
  }, 300_000);

  it('holds a namespace name while pinned: a namespace made after its processes died gets another', async () => {
    const own = readlinkSync('/proc/self/ns/mnt');
    const inNamespace = (child: ReturnType<typeof spawn>) =>
      until(
        () => child.pid !== undefined && readlinkSync(`/proc/${child.pid}/ns/mnt`) !== own,
        'unshare to enter its namespace',
        10_000,
      );
    const first = spawn('unshare', ['--mount', 'sleep', '60'], { stdio: 'ignore' });
    await inNamespace(first);
    const pin = pinMountNamespace(first.pid ?? 0);
    const next: ReturnType<typeof spawn>[] = [];
    try {
      first.kill('SIGKILL');
      await until(() => first.exitCode !== null || first.signalCode !== null, 'the first to die', 10_000);
      for (let i = 0; i < 5; i++) {
        const child = spawn('unshare', ['--mount', 'sleep', '60'], { stdio: 'ignore' });
        next.push(child);
        await inNamespace(child);
        expect(readlinkSync(`/proc/${child.pid}/ns/mnt`)).not.toBe(pin.name);
      }
      expect(() => pinMountNamespace(next[0]?.pid ?? 0, pin.name)).toThrow(/not mnt:/);
    } finally {
      pin.close();
      first.kill('SIGKILL');
      for (const child of next) child.kill('SIGKILL');
    }
  });
});
