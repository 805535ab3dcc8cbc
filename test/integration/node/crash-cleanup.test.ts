/**
 * The local node (our imitation of a kubelet) must leave nothing behind when its process is
 * killed hard (SIGKILL runs no exit handler): a runner process starts the whole one-machine
 * cluster with a running pod, is SIGKILLed, and within seconds the pod's process, the slot's
 * network namespaces, its bridge, its claim and its directories are gone.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { execFileSync } from 'node:child_process';
import { repoRoot } from '../../../local/control-plane/repo-root.js';
import { builtCli } from '../../e2e/support/built-cli.js';
import { isAlive, until } from '../../support/processes.js';

const scratch = mkdtempSync(join(tmpdir(), 'node-crash-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const netnsOf = (prefix: string) =>
  execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.startsWith(prefix));

it('cleans up pods, namespaces, bridge and files when the node process is SIGKILLed', async () => {
  await builtCli(); // dist/ current
  const dist = (...path: string[]) => pathToFileURL(join(repoRoot(), 'dist', ...path)).href;
  const script = join(scratch, 'runner.mjs');
  const images = join(repoRoot(), 'test', 'fixtures', 'node', 'images.yaml');
  writeFileSync(
    script,
    `import { startLocalCluster } from ${JSON.stringify(dist('local', 'node', 'index.js'))};
import { CoreV1Api } from '@kubernetes/client-node';
const cluster = await startLocalCluster({ handleSignals: false, node: { imageMapFiles: [${JSON.stringify(images)}] } });
const core = cluster.controlPlane.kubeConfig.makeApiClient(CoreV1Api);
const namespace = 'default';
for (;;) {
  try { await core.readNamespacedServiceAccount({ name: 'default', namespace }); break; }
  catch { await new Promise((r) => setTimeout(r, 200)); }
}
await core.createNamespacedPod({ namespace, body: { metadata: { name: 'sleeper' }, spec: {
  // $$ is an escaped $ in Kubernetes: $$$$ reaches the shell as $$.
  containers: [{ name: 'main', image: 'bpa.local/test/shell:1', command: ['/bin/sh', '-c', 'echo $$$$ > /out/pid; exec sleep 300'],
    volumeMounts: [{ name: 'out', mountPath: '/out' }] }],
  volumes: [{ name: 'out', hostPath: { path: '/out' } }] } } });
const pidFile = cluster.node.workDir + '/host-paths/out/pid';
const { existsSync } = await import('node:fs');
while (!existsSync(pidFile)) await new Promise((r) => setTimeout(r, 200));
console.log(JSON.stringify({ slot: cluster.node.slot, workDir: cluster.node.workDir, pidFile }));
setInterval(() => {}, 1000);
`,
  );
  // The runner imports client-node: run it from the repository so that node_modules resolves.
  const runnerPath = join(repoRoot(), 'dist', `node-crash-runner-${process.pid}.mjs`);
  writeFileSync(runnerPath, readFileSync(script));
  const runner = spawn(process.execPath, [runnerPath], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    let out = '';
    runner.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    await until(() => out.includes('\n'), 'the runner to start the cluster and its pod', 240_000);
    const started = JSON.parse(out.split('\n')[0] ?? '{}') as {
      slot: { netnsPrefix: string; bridge: string; claimFile: string };
      workDir: string;
      pidFile: string;
    };
    const containerPid = Number(readFileSync(started.pidFile, 'utf8'));
    expect(isAlive(containerPid)).toBe(true);
    expect(netnsOf(started.slot.netnsPrefix).length).toBeGreaterThan(0);

    runner.kill('SIGKILL');
    await until(
      () =>
        !isAlive(containerPid) &&
        netnsOf(started.slot.netnsPrefix).length === 0 &&
        !existsSync(started.slot.claimFile) &&
        !existsSync(started.workDir),
      'the crash clean-up',
      20_000,
    );
    expect(() => execFileSync('ip', ['link', 'show', started.slot.bridge], { stdio: 'ignore' })).toThrow();
  } finally {
    runner.kill('SIGKILL');
    rmSync(runnerPath, { force: true });
  }
}, 300_000);
