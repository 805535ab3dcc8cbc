import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { CloudEvent } from 'cloudevents';
import { postEvent } from '../shared/cloudevents/sink-client.js';
import { projectCrds, repoRoot, startControlPlane } from '../local/control-plane/index.js';
import type { BenchModule } from './run.js';

/**
 * Each function as the container runs it: `node dist/functions/<name>/main.js` as its own
 * process, KUBECONFIG pointing at a started control plane (with the project's CRDs). Prints
 * the time from spawn to /health/readiness answering 200, resident memory once ready, and
 * after one sweep (a ping event against an empty cluster: the first request's cost included).
 */
const functionNames = ['host-lookup', 'inventory-render', 'kud-job-launch', 'software-install'];
const sweepers = new Set(['host-lookup', 'kud-job-launch', 'software-install']);

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function rssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? NaN);
  return kib / 1024;
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
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`not ready within ${timeoutMs} ms`);
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

export const functionsBench: BenchModule = {
  name: 'functions: start-to-ready and memory (real processes)',
  async run(print) {
    const root = repoRoot();
    const mains = functionNames.map((name) => join(root, 'dist', 'functions', name, 'main.js'));
    if (mains.some((path) => !existsSync(path))) {
      print('skipped: dist/functions/*/main.js missing (run npm run build)');
      return;
    }
    const controlPlane = await startControlPlane({ crds: projectCrds(process.env, root).inputs });
    try {
      print('function          ready      RSS ready   first ping   RSS after ping');
      for (const [index, name] of functionNames.entries()) {
        const port = await freePort();
        const url = `http://127.0.0.1:${port}`;
        const started = performance.now();
        const child = spawn(process.execPath, [mains[index] as string], {
          env: {
            ...process.env,
            KUBECONFIG: controlPlane.kubeconfigPath,
            HOST: '127.0.0.1',
            PORT: String(port),
            LOG_LEVEL: 'error',
            OTEL_TRACES_EXPORTER: 'none',
          },
          stdio: ['ignore', 'ignore', 'inherit'],
        });
        try {
          await waitReady(url, child);
          const readyMs = performance.now() - started;
          const rssReady = await rssMiB(child.pid as number);
          let ping = 'n/a';
          if (sweepers.has(name)) {
            const before = performance.now();
            const response = await postEvent(
              url,
              new CloudEvent<unknown>({ type: 'dev.knative.sources.ping', source: '/bench', data: {} }),
            );
            ping = `${Math.round(performance.now() - before)} ms (${response.status})`;
          }
          const rssAfter = await rssMiB(child.pid as number);
          print(
            `${name.padEnd(17)} ${`${Math.round(readyMs)} ms`.padEnd(10)} ${`${rssReady.toFixed(1)} MiB`.padEnd(11)} ${ping.padEnd(12)} ${rssAfter.toFixed(1)} MiB`,
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
