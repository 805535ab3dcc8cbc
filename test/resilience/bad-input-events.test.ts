/**
 * Bad input, CloudEvents: at least 1,000 hostile events per function, POSTed to the function's
 * real HTTP server (shared/server) running its real definition against the real API server.
 * Every malformed one must get a 400 with a JSON {error: {reason, message}}; well-formed events
 * with hostile values may be answered 204 (nothing to do) or a clear 4xx, never a 5xx; the
 * server stays alive and healthy throughout.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { definition as hostLookup } from '../../functions/host-lookup/index.js';
import { definition as inventoryRender } from '../../functions/inventory-render/index.js';
import { definition as kudJobLaunch } from '../../functions/kud-job-launch/index.js';
import { definition as softwareInstall } from '../../functions/software-install/index.js';
import { silentLogger } from '../../shared/log.js';
import { startFunctionServer, type RunningFunctionServer } from '../../shared/server/function-server.js';
import type { FunctionDefinition } from '../../shared/server/types.js';
import { useTestCluster } from '../support/cluster.js';
import { FaultTally } from './report/tally.js';
import { hostileEvents, type HostileRequest } from './support/event-corpus.js';
import { resilienceSeed, show } from './support/hostile.js';
import { rawGet, rawPost, type RawResponse } from './support/raw-http.js';

const cluster = useTestCluster();
const tally = new FaultTally(import.meta.url);
const eventsPerFunction = 1000;

const definitions = [
  hostLookup,
  inventoryRender,
  kudJobLaunch,
  softwareInstall,
] as FunctionDefinition<unknown>[];

/** Groups kinds for the printed counts: `<type> data: missing x.y` → `<type>: missing field`. */
const coarse = (kind: string) =>
  kind
    .replace(/^(?:dev\.knative\.|org\.akraino\.icn\.bpa\.)/, '')
    .replace(/ data: missing .*/, ': missing field')
    .replace(/ data: hostile .*/, ': hostile value')
    .replace(/ data: .*/, ': wrong type')
    .replace(/^binary without .*/, 'binary without a required attribute');

/** Why an answer is not acceptable for this request, or undefined when it is. */
function problemWith(request: HostileRequest, response: RawResponse): string | undefined {
  if (response.status >= 500) return `answered ${response.status}`;
  if (request.malformed && response.status !== 400) return `malformed but answered ${response.status}`;
  if (response.status === 204 || response.status === 200) return undefined;
  if (response.status < 400) return `answered ${response.status}`;
  try {
    const body = JSON.parse(response.body) as { error?: { reason?: unknown; message?: unknown } };
    const { reason, message } = body.error ?? {};
    if (typeof reason !== 'string' || !/^[A-Z][A-Za-z]+$/.test(reason))
      return `no CamelCase reason: ${response.body}`;
    if (typeof message !== 'string' || message.length < 10) return `no clear message: ${response.body}`;
  } catch {
    return `error body is not JSON: ${response.body.slice(0, 200)}`;
  }
  return undefined;
}

describe('hostile CloudEvents against each function server', () => {
  let sink: Server;
  let sinkUrl: string;
  const servers = new Map<string, RunningFunctionServer>();

  beforeAll(async () => {
    // The sweep's context.send target: accepts and forgets.
    sink = createServer((request, response) => {
      request.resume();
      request.on('end', () => response.writeHead(202).end());
    });
    await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
    sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/ns/default`;
    for (const definition of definitions) {
      servers.set(
        definition.name,
        await startFunctionServer({
          definition,
          host: '127.0.0.1',
          port: 0,
          kubeConfig: cluster.kubeConfig,
          env: { BMH_NAMESPACE: cluster.namespace },
          sink: sinkUrl,
          log: silentLogger,
          tracing: false,
          processMetrics: false,
        }),
      );
    }
  });

  afterAll(async () => {
    for (const server of servers.values()) await server.close();
    await new Promise<void>((resolve) => sink?.close(() => resolve()));
  });

  it.each(definitions.map((d) => [d.name]))(
    '%s answers every hostile event with a clear 4xx (or 204), never a 5xx, and stays healthy',
    async (name) => {
      const server = servers.get(name)!;
      const accepts = Object.keys(definitions.find((d) => d.name === name)!.events);
      const byKind = new Map<string, Map<number, number>>();
      const problems: string[] = [];
      let sent = 0;
      let malformed = 0;
      await fc.assert(
        fc.asyncProperty(hostileEvents(name, accepts), async (request) => {
          const response = await rawPost(server.url, request.headers, request.body);
          sent++;
          if (request.malformed) malformed++;
          const kind = coarse(request.kind);
          const statuses = byKind.get(kind) ?? new Map<number, number>();
          statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
          byKind.set(kind, statuses);
          const problem = problemWith(request, response);
          tally.record('Bad input', problem === undefined);
          if (problem) problems.push(`${request.kind}: ${problem} for ${show(request.body)}`);
        }),
        { seed: resilienceSeed, numRuns: eventsPerFunction, endOnFailure: false },
      );
      expect(await rawGet(`${server.url}/health/liveness`)).toBe(200);
      expect(await rawGet(`${server.url}/health/readiness`)).toBe(200);
      const lines = [...byKind.entries()]
        .sort()
        .map(
          ([kind, statuses]) => `${kind} → ${[...statuses.entries()].map(([s, n]) => `${s}×${n}`).join(' ')}`,
        );
      tally.note(`${name}: ${sent} hostile events (${malformed} malformed); answers: ${lines.join('; ')}`);
      expect(problems.slice(0, 10)).toEqual([]);
      expect(sent).toBeGreaterThanOrEqual(eventsPerFunction * 0.98);
    },
    300_000,
  );
});
