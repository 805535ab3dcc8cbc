import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { silentLogger } from '../shared/log.js';
import { startBroker } from '../local/broker/index.js';

/**
 * Embedded broker figures: events/s through one hop to a trivial subscriber (5,000 events,
 * 32 in flight; goal >= 2,000 events/s), and, for information, the latency a hop adds, measured
 * as the time until the subscriber has the event, via the broker vs a direct POST to the same
 * subscriber, in the same run, after a warm-up of 3,000 events one at a time on each path
 * (steady state).
 */
const throughputEvents = 5000;
const throughputConcurrency = 32;
const latencyEvents = 1000;
const latencyRounds = 10;
const warmUpEvents = 3000;

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
const fmt = (ms: number) => `${ms.toFixed(3)} ms`;

async function startTrivialSubscriber() {
  const receivedAt = new Map<string, number>();
  const server = http.createServer({ keepAliveTimeout: 60_000 }, (request, response) => {
    request.resume();
    request.on('end', () => {
      receivedAt.set(request.headers['ce-id'] as string, performance.now());
      response.writeHead(202).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    receivedAt,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function post(agent: http.Agent, url: string, id: string): Promise<number> {
  const body = Buffer.from('{"n":1}');
  return new Promise((resolve, reject) => {
    const request = http.request(url, {
      method: 'POST',
      agent,
      headers: {
        'ce-specversion': '1.0',
        'ce-id': id,
        'ce-type': 'bench.ping',
        'ce-source': '/bench',
        'content-type': 'application/json',
        'content-length': String(body.length),
      },
    });
    request.on('error', reject);
    request.on('response', (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    request.end(body);
  });
}

/** Sends `count` events with `concurrency` in flight; returns send-start times and round trips by id. */
async function sendAll(agent: http.Agent, url: string, count: number, concurrency: number) {
  const sentAt = new Map<string, number>();
  const roundTrip: number[] = [];
  let next = 0;
  const worker = async () => {
    while (next < count) {
      next += 1;
      const id = randomUUID();
      const started = performance.now();
      sentAt.set(id, started);
      const status = await post(agent, url, id);
      if (status !== 202) throw new Error(`unexpected status ${status} from ${url}`);
      roundTrip.push(performance.now() - started);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { sentAt, roundTrip };
}

async function waitUntil(condition: () => boolean, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('benchmark timed out waiting for deliveries');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function run(print: (line: string) => void): Promise<void> {
  const subscriber = await startTrivialSubscriber();
  const broker = await startBroker({
    objects: [
      {
        apiVersion: 'eventing.knative.dev/v1',
        kind: 'Broker',
        metadata: { name: 'default', namespace: 'bench' },
      },
      {
        apiVersion: 'eventing.knative.dev/v1',
        kind: 'Trigger',
        metadata: { name: 'all', namespace: 'bench' },
        spec: {
          broker: 'default',
          filter: { attributes: { type: 'bench.ping' } },
          subscriber: { uri: subscriber.url },
        },
      },
    ],
    resolveRef: () => subscriber.url,
    log: silentLogger,
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: throughputConcurrency });
  const ingress = broker.ingressUrl('bench', 'default');
  try {
    // Warm up connections and the JIT on both paths: a few hundred events in parallel, then
    // enough one at a time that both paths are measured at their steady state (with only a few
    // hundred, Node's own HTTP code is still being optimised and both figures come out 2x high).
    await sendAll(agent, subscriber.url, 200, 8);
    await sendAll(agent, ingress, 200, 8);
    await sendAll(agent, subscriber.url, warmUpEvents, 1);
    await sendAll(agent, ingress, warmUpEvents, 1);
    await waitUntil(() => broker.inFlight() === 0, 30_000);

    // Latency: one event at a time, so the figures are a hop's cost and not queueing.
    const oneWay = (sentAt: Map<string, number>) =>
      [...sentAt].map(([id, at]) => subscriber.receivedAt.get(id)! - at).sort((a, b) => a - b);
    // In rounds that alternate the two paths, so that both see the same machine state (a
    // shared VM's speed drifts over seconds).
    const direct = { sentAt: new Map<string, number>(), roundTrip: [] as number[] };
    const viaBroker = { sentAt: new Map<string, number>(), roundTrip: [] as number[] };
    for (let round = 0; round < latencyRounds; round++) {
      for (const [url, into] of [
        [subscriber.url, direct],
        [ingress, viaBroker],
      ] as const) {
        const part = await sendAll(agent, url, latencyEvents / latencyRounds, 1);
        part.sentAt.forEach((at, id) => into.sentAt.set(id, at));
        into.roundTrip.push(...part.roundTrip);
      }
    }
    const directOneWay = oneWay(direct.sentAt);
    const directRoundTrip = [...direct.roundTrip].sort((a, b) => a - b);
    await waitUntil(() => [...viaBroker.sentAt.keys()].every((id) => subscriber.receivedAt.has(id)), 30_000);
    const brokerOneWay = oneWay(viaBroker.sentAt);
    const addedMedian = percentile(brokerOneWay, 0.5) - percentile(directOneWay, 0.5);
    const addedP99 = percentile(brokerOneWay, 0.99) - percentile(directOneWay, 0.99);

    // Throughput: 5,000 events, 32 in flight, until the subscriber has every one.
    const started = performance.now();
    const cpuBefore = process.cpuUsage();
    const burst = await sendAll(agent, ingress, throughputEvents, throughputConcurrency);
    await waitUntil(() => [...burst.sentAt.keys()].every((id) => subscriber.receivedAt.has(id)), 120_000);
    const seconds = (performance.now() - started) / 1000;
    const eventsPerSecond = throughputEvents / seconds;
    const cpu = process.cpuUsage(cpuBefore);
    // Producer, broker and subscriber share this one thread: events per second of its CPU is
    // what one idle core would carry, whatever else the machine is doing.
    const eventsPerCpuSecond = throughputEvents / ((cpu.user + cpu.system) / 1e6);

    print(
      `load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    print(
      `events through the broker: ${throughputEvents} in ${seconds.toFixed(2)} s = ${eventsPerSecond.toFixed(0)} events/s (goal >= 2000)`,
    );
    print(
      `  per CPU-second of the bench process (producer + broker + subscriber, one thread): ${eventsPerCpuSecond.toFixed(0)} events`,
    );
    print(
      `direct POST: until received median ${fmt(percentile(directOneWay, 0.5))}, p99 ${fmt(percentile(directOneWay, 0.99))}; round trip median ${fmt(percentile(directRoundTrip, 0.5))}, p99 ${fmt(percentile(directRoundTrip, 0.99))}`,
    );
    const brokerRoundTrip = [...viaBroker.roundTrip].sort((a, b) => a - b);
    print(
      `via broker:  until received median ${fmt(percentile(brokerOneWay, 0.5))}, p99 ${fmt(percentile(brokerOneWay, 0.99))}; ` +
        `producer's round trip (202) median ${fmt(percentile(brokerRoundTrip, 0.5))}, p99 ${fmt(percentile(brokerRoundTrip, 0.99))}`,
    );
    print(`added by one hop: median ${fmt(addedMedian)}, p99 ${fmt(addedP99)}`);
  } finally {
    agent.destroy();
    await broker.close();
    await subscriber.close();
  }
}

export const brokerBench = { name: 'embedded broker', run };
