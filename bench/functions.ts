import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { CloudEvent } from 'cloudevents';
import { postEvent } from '../shared/cloudevents/sink-client.js';
import { projectCrds, repoRoot, startControlPlane } from '../local/control-plane/index.js';
import { freeLoopbackPort } from '../local/control-plane/free-port.js';
import type { BenchModule } from './module.js';

/**
 * Cold start of each function as its image runs it: `node dist/bundle/<name>.mjs` (the esbuild
 * bundle, scripts/bundle.mjs) as its own process. Prints, as medians of 10 starts:
 * - ready: from spawn until /health/readiness answers 200 (goal <= 300 ms), beside the floor,
 *   a bare `node -e ''` from spawn to exit;
 * - the CPU the process used until then (user + system, from /proc, 10 ms ticks: less noisy
 *   than wall time on a shared machine), beside a bare node's CPU when it runs its first line;
 * - RSS when ready (goal < 80 MiB);
 * and the same for the unbundled tsc output (dist/functions/<name>/main.js), 3 starts, for
 * comparison. Readiness never calls the API server, so these starts get a kubeconfig that
 * points at a closed loopback port. Then, against a started control plane, the first ping (a
 * sweep over an empty cluster, the first request's cost included) and RSS after it.
 */
const functionNames = ['host-lookup', 'inventory-render', 'kud-job-launch', 'software-install'];
const sweepers = new Set(['host-lookup', 'kud-job-launch', 'software-install']);
const starts = 10;
const unbundledStarts = 3;

async function rssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? NaN);
  return kib / 1024;
}

/** User + system CPU of a process so far, in ms (clock ticks of /proc/<pid>/stat; 100 Hz). */
async function cpuMs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

async function waitReady(url: string, child: ChildProcess, timeoutMs = 60_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`exited with code ${child.exitCode} before ready`);
    try {
      if ((await fetch(`${url}/health/readiness`)).status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  throw new Error(`not ready within ${timeoutMs} ms`);
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

interface Start {
  readyMs: number;
  cpuMs: number;
  rssMiB: number;
}

function spawnFunction(entry: string, kubeconfig: string, port: number): ChildProcess {
  return spawn(process.execPath, [entry], {
    env: {
      ...process.env,
      KUBECONFIG: kubeconfig,
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'error',
      OTEL_TRACES_EXPORTER: 'none',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

async function coldStart(entry: string, kubeconfig: string): Promise<Start> {
  const port = await freeLoopbackPort();
  const started = performance.now();
  const child = spawnFunction(entry, kubeconfig, port);
  try {
    await waitReady(`http://127.0.0.1:${port}`, child);
    const readyMs = performance.now() - started;
    const pid = child.pid as number;
    return { readyMs, cpuMs: await cpuMs(pid), rssMiB: await rssMiB(pid) };
  } finally {
    await stop(child);
  }
}

/** CPU a bare Node process has used once it runs its first line (user + system, ms). */
async function bareNodeCpuMs(): Promise<number> {
  const child = spawn(process.execPath, ['-e', "process.stdout.write('up'); setInterval(() => {}, 1000)"], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  try {
    await new Promise<void>((resolve, reject) => {
      child.once('error', reject);
      child.stdout.once('data', () => resolve());
    });
    return await cpuMs(child.pid as number);
  } finally {
    await stop(child);
  }
}

/** Spawn to exit of `node -e ''`: what any Node process costs before it runs a line. */
async function bareNode(): Promise<number> {
  const started = performance.now();
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
    child.once('error', reject);
    child.once('exit', () => resolve());
  });
  return performance.now() - started;
}

const summary = (runs: Start[]) =>
  `${`${Math.round(median(runs.map((r) => r.readyMs)))} ms`.padEnd(9)} ${`${Math.round(median(runs.map((r) => r.cpuMs)))} ms`.padEnd(9)} ${median(runs.map((r) => r.rssMiB)).toFixed(1)} MiB`;

export const functionsBench: BenchModule = {
  name: 'functions: cold start (bundles, real processes) and the first ping',
  async run(print) {
    const root = repoRoot();
    const bundles = functionNames.map((name) => join(root, 'dist', 'bundle', `${name}.mjs`));
    if (bundles.some((path) => !existsSync(path))) {
      print('skipped: dist/bundle/*.mjs missing (run npm run build)');
      return;
    }
    const scratch = mkdtempSync(join(tmpdir(), 'bpa-bench-functions-'));
    const closedPort = await freeLoopbackPort();
    const unusedKubeconfig = join(scratch, 'kubeconfig');
    writeFileSync(
      unusedKubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'unused', cluster: { server: `https://127.0.0.1:${closedPort}` } }],
        users: [{ name: 'unused', user: { token: 'unused' } }],
        contexts: [{ name: 'unused', context: { cluster: 'unused', user: 'unused' } }],
        'current-context': 'unused',
      }),
    );
    try {
      const floor: number[] = [];
      const floorCpu: number[] = [];
      for (let run = 0; run < starts; run++) {
        floor.push(await bareNode());
        floorCpu.push(await bareNodeCpuMs());
      }
      print(
        `load average ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')}; medians of ${starts} starts each`,
      );
      print(
        `floor: node -e '' from spawn to exit ${Math.round(median(floor))} ms; a bare node's CPU at its first line ${Math.round(median(floorCpu))} ms`,
      );
      print('function          ready     CPU       RSS ready   | unbundled: ready   CPU       RSS');
      for (const [index, name] of functionNames.entries()) {
        const runs: Start[] = [];
        for (let run = 0; run < starts; run++) runs.push(await coldStart(bundles[index]!, unusedKubeconfig));
        const unbundledEntry = join(root, 'dist', 'functions', name, 'main.js');
        let unbundled = 'n/a (no dist/functions)';
        if (existsSync(unbundledEntry)) {
          const slow: Start[] = [];
          for (let run = 0; run < unbundledStarts; run++)
            slow.push(await coldStart(unbundledEntry, unusedKubeconfig));
          unbundled = summary(slow);
        }
        print(`${name.padEnd(17)} ${summary(runs).padEnd(31)} | ${unbundled}`);
      }
      print('goals: ready <= 300 ms, RSS < 80 MiB');
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }

    const controlPlane = await startControlPlane({ crds: projectCrds(process.env, root).inputs });
    try {
      print('function          first ping (sweep, empty cluster)   RSS after ping');
      for (const [index, name] of functionNames.entries()) {
        if (!sweepers.has(name)) continue;
        const port = await freeLoopbackPort();
        const url = `http://127.0.0.1:${port}`;
        const child = spawnFunction(bundles[index]!, controlPlane.kubeconfigPath, port);
        try {
          await waitReady(url, child);
          const before = performance.now();
          const response = await postEvent(
            url,
            new CloudEvent<unknown>({ type: 'dev.knative.sources.ping', source: '/bench', data: {} }),
          );
          const ping = `${Math.round(performance.now() - before)} ms (${response.status})`;
          print(
            `${name.padEnd(17)} ${ping.padEnd(35)} ${(await rssMiB(child.pid as number)).toFixed(1)} MiB`,
          );
        } finally {
          await stop(child);
        }
      }
    } finally {
      await controlPlane.stop();
    }
  },
};
