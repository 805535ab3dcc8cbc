import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import type { KubeConfig } from '@kubernetes/client-node';
import { BatchSpanProcessor, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { CloudEvent } from 'cloudevents';
import { z } from 'zod';
import { silentLogger } from '../shared/log.js';
import { startFunctionServer, type RunningFunctionServer } from '../shared/server/function-server.js';
import { on, type FunctionDefinition } from '../shared/server/types.js';
import { Tracing } from '../shared/telemetry/tracing.js';
import type { BenchModule } from './module.js';

/**
 * The function server's own cost, with a trivial function (validates `{n}` and replies):
 * - invocation latency (sequential, p50/p99) and throughput (16 concurrent keep-alive clients)
 *   with metrics and tracing off, on as deployed by default (metrics + trace propagation, no
 *   exporter), and on with spans exported (batch processor to an exporter that drops them);
 *   the configurations are interleaved over several rounds in one run and the best round kept;
 * - start-to-ready time and resident memory of a process running just that server.
 */

const echoType = 'bench.echo';
const trivialFunction: FunctionDefinition<Record<string, never>> = {
  name: 'bench-echo',
  events: {
    [echoType]: on(
      z.object({ n: z.number() }),
      async (_context, data) =>
        new CloudEvent({
          type: 'bench.echoed',
          source: '/bpa-functions/bench-echo',
          datacontenttype: 'application/json',
          data,
        }),
    ),
  },
  configSchema: z.object({}).transform(() => ({})),
};
const noKube = {} as KubeConfig;

class DroppingExporter implements SpanExporter {
  exported = 0;
  export(spans: ReadableSpan[], done: (result: { code: number }) => void): void {
    this.exported += spans.length;
    done({ code: 0 });
  }
  async shutdown(): Promise<void> {}
}

interface Configuration {
  label: string;
  start: () => Promise<RunningFunctionServer>;
}

const base = {
  definition: trivialFunction,
  host: '127.0.0.1',
  port: 0,
  kubeConfig: noKube,
  env: {},
  log: silentLogger,
};
const configurations: Configuration[] = [
  {
    label: 'metrics+tracing off',
    start: () => startFunctionServer({ ...base, metrics: false, tracing: false }),
  },
  {
    label: 'metrics+tracing on (default, no exporter)',
    start: () => startFunctionServer(base),
  },
  {
    label: 'metrics+tracing on, spans exported',
    start: async () =>
      startFunctionServer({
        ...base,
        tracing: await Tracing.create({
          serviceName: 'bench-echo',
          env: {},
          spanProcessors: [new BatchSpanProcessor(new DroppingExporter())],
        }),
      }),
  },
];

const agent = new Agent({ keepAlive: true, maxSockets: 64 });
const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

function invoke(port: number, n: number): Promise<number> {
  const body = JSON.stringify({ n });
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/',
        agent,
        headers: {
          'ce-specversion': '1.0',
          'ce-id': `bench-${n}`,
          'ce-source': '/bench',
          'ce-type': echoType,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          traceparent,
        },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          res.statusCode === 200 ? resolve(res.statusCode) : reject(new Error(`HTTP ${res.statusCode}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

async function latency(port: number, count: number): Promise<{ p50: number; p99: number }> {
  const samples: number[] = [];
  for (let index = 0; index < count; index += 1) {
    const started = performance.now();
    await invoke(port, index);
    samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

async function throughput(port: number, total: number, concurrency: number): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) await invoke(port, next++);
    }),
  );
  return total / ((performance.now() - started) / 1000);
}

interface Figures {
  p50: number;
  p99: number;
  rps: number;
}

/** Start-to-ready and RSS of a child process running only this server (compiled build only). */
async function childStartup(): Promise<{ readyMs: number; rssMiB: number } | undefined> {
  const serverModule = fileURLToPath(new URL('../shared/server/function-server.js', import.meta.url));
  if (!existsSync(serverModule)) return undefined;
  const script = `
    const t0 = performance.now();
    const { startFunctionServer } = await import(${JSON.stringify(serverModule)});
    const { z } = await import('zod');
    const server = await startFunctionServer({
      definition: { name: 'bench-echo', events: { x: { data: z.unknown(), handle: async () => undefined } }, configSchema: z.object({}) },
      host: '127.0.0.1', port: 0, kubeConfig: {}, log: { info() {}, warn() {}, error() {}, debug() {}, child() { return this; } },
    });
    const ready = await fetch(server.url + '/health/readiness');
    process.stdout.write(JSON.stringify({ readyMs: performance.now() - t0, status: ready.status, rss: process.memoryUsage().rss }));
    await server.close();
  `;
  const output = await new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let text = '';
    child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`exit ${code}`))));
  });
  const parsed = JSON.parse(output) as { readyMs: number; status: number; rss: number };
  return { readyMs: parsed.readyMs, rssMiB: parsed.rss / 1024 / 1024 };
}

export const functionServerBench: BenchModule = {
  name: 'function server: invocation overhead of metrics + tracing; start-up',
  run: async (print) => {
    const rounds = 3;
    const sequential = 1000;
    const concurrent = 4000;
    const concurrency = 16;
    const best = new Map<string, Figures>();
    for (let round = 0; round < rounds; round += 1) {
      for (const configuration of configurations) {
        const server = await configuration.start();
        try {
          await latency(server.port, 200); // warm-up: JIT, sockets
          const { p50, p99 } = await latency(server.port, sequential);
          const rps = await throughput(server.port, concurrent, concurrency);
          const previous = best.get(configuration.label);
          if (!previous || rps > previous.rps) best.set(configuration.label, { p50, p99, rps });
        } finally {
          await server.close();
        }
      }
    }
    agent.destroy();
    const off = best.get(configurations[0]!.label)!;
    print(
      `trivial function, best of ${rounds} interleaved rounds; ${sequential} sequential requests, ${concurrent} with ${concurrency} concurrent clients`,
    );
    for (const configuration of configurations) {
      const figures = best.get(configuration.label)!;
      const overhead =
        figures === off
          ? ''
          : `  overhead vs off: p50 ${(figures.p50 - off.p50 >= 0 ? '+' : '') + (figures.p50 - off.p50).toFixed(3)} ms, throughput ${(((figures.rps - off.rps) / off.rps) * 100).toFixed(1)}%`;
      print(
        `  ${configuration.label.padEnd(42)} p50 ${figures.p50.toFixed(3)} ms  p99 ${figures.p99.toFixed(3)} ms  ${figures.rps.toFixed(0)} req/s${overhead}`,
      );
    }
    const startup = await childStartup();
    if (startup) {
      print(
        `  start-up (own process, import to readiness 200): ${startup.readyMs.toFixed(1)} ms, RSS when ready ${startup.rssMiB.toFixed(1)} MiB`,
      );
    } else {
      print('  start-up: skipped (needs the compiled build: npm run build)');
    }
  },
};
