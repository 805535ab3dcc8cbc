/**
 * HTTP inputs, CloudEvents (issue 28 item 3): every function server with a CloudEvent endpoint
 * (host-lookup, inventory-render, kud-job-launch, software-install, image-verify; image-upload's
 * server is the image service, in http-inputs.test.ts) runs its real definition on the real
 * shared/server against the run's real API server, and gets generated bad deliveries
 * (fast-check, fixed seed): broken envelopes (binary and structured), types it does not accept,
 * data failing the schema, and valid events that name objects (or namespaces) that do not exist.
 *
 * None may be answered 5xx or crash the server, and none may be answered with a status Knative's
 * delivery retries (its SelectiveRetry: 404, 408, 409, 429, 5xx): the input can never succeed, so
 * it gets a 4xx that is not retried, or a 2xx with no reply. An event naming a missing object is
 * "nothing to do": 204.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { definition as hostLookup } from '../../functions/host-lookup/index.js';
import { definition as imageVerify } from '../../functions/image-verify/index.js';
import { definition as inventoryRender } from '../../functions/inventory-render/index.js';
import { definition as kudJobLaunch } from '../../functions/kud-job-launch/index.js';
import { definition as softwareInstall } from '../../functions/software-install/index.js';
import { EventTypes, SourceEventTypes } from '../../shared/events/types.js';
import { silentLogger } from '../../shared/log.js';
import { startFunctionServer, type RunningFunctionServer } from '../../shared/server/function-server.js';
import type { FunctionDefinition } from '../../shared/server/types.js';
import { useTestCluster } from '../support/cluster.js';
import { FaultTally } from './report/tally.js';
import { hostileEvents, type HostileRequest } from './support/event-corpus.js';
import { resilienceSeed, show } from './support/hostile.js';
import { rawGet, rawPost, type RawResponse } from './support/raw-http.js';

const cluster = useTestCluster({ namespacePrefix: 'http-events' });
const tally = new FaultTally(import.meta.url);
/** Per function: bounded in count (and, by fast-check's time limit, in time). */
const hostilePerFunction = 250;
const missingPerFunction = 100;
const timeLimitMs = 120_000;

const definitions = [
  hostLookup,
  inventoryRender,
  kudJobLaunch,
  softwareInstall,
  imageVerify,
] as FunctionDefinition<unknown>[];

/** The statuses Knative's delivery retries (SelectiveRetry): never for input that cannot succeed. */
const retried = (status: number) => status >= 500 || [404, 408, 409, 429].includes(status);

/** A DNS-1123 label no object of the test has. */
const missingName = fc.stringMatching(/^[a-z][a-z0-9]{2,12}$/).map((s) => `gone-${s}`);

/** Valid data for an accepted type, naming `name` in `namespace` (neither of which holds it). */
function validData(functionName: string, type: string, namespace: string, name: string): unknown {
  const ref = { namespace, name, uid: `uid-${name}`, generation: 1 };
  const node = {
    label: 'master-1',
    roles: ['master'],
    mac: 'aa:bb:cc:dd:ee:01',
    ip: '10.0.0.1',
    source: 'dhcp-leases',
  };
  switch (type) {
    case EventTypes.hostsResolved:
      return { provisioning: ref, cluster: name, clusterType: 'baremetal', nodes: [node] };
    case EventTypes.inventoryRendered:
      return {
        provisioning: ref,
        cluster: name,
        clusterType: 'baremetal',
        configMap: `${name}-inventory`,
        inventorySha256: 'a'.repeat(64),
      };
    case EventTypes.clusterReady:
      return { provisioning: ref, cluster: name, configMap: `${name}-configmap`, nodes: [node] };
    case EventTypes.imageUploaded:
      return { image: ref, cluster: name, type: 'os', length: 3 };
    case SourceEventTypes.resourceAdd:
    case SourceEventTypes.resourceUpdate: {
      const metadata = {
        name,
        namespace,
        uid: `uid-${name}`,
        generation: 1,
        resourceVersion: '1',
        labels: { cluster: name },
      };
      if (functionName === 'kud-job-launch')
        return {
          apiVersion: 'batch/v1',
          kind: 'Job',
          metadata: {
            ...metadata,
            name: `kud-${name}`,
            labels: { cluster: name, 'app.kubernetes.io/managed-by': 'bpa-functions' },
          },
          spec: {},
          status: { succeeded: 1 },
        };
      if (functionName === 'software-install')
        return {
          apiVersion: 'bpa.akraino.org/v1alpha1',
          kind: 'Software',
          metadata,
          spec: { masterSoftware: ['htop'], workerSoftware: [] },
        };
      return {
        apiVersion: 'bpa.akraino.org/v1alpha1',
        kind: 'Provisioning',
        metadata,
        spec: { masters: [{ 'master-1': { 'mac-address': 'aa:bb:cc:dd:ee:01' } }] },
      };
    }
    default:
      return undefined;
  }
}

/** Valid events naming objects that do not exist: in the test's namespace, or in none at all. */
function missingReferences(functionName: string, accepts: readonly string[]) {
  const types = accepts.filter((type) => validData(functionName, type, 'n', 'n') !== undefined);
  return fc
    .tuple(fc.constantFrom(...types), fc.boolean(), missingName, fc.boolean())
    .map(([type, inTestNamespace, name, structured]) => {
      const namespace = inTestNamespace ? cluster.namespace : `nowhere-${name}`;
      const data = validData(functionName, type, namespace, name);
      const attributes = {
        specversion: '1.0',
        id: `missing-${name}-${type}`,
        source: '/resilience/http-events',
        type,
        subject: `namespaces/${namespace}/objects/${name}`,
      };
      const request: HostileRequest = structured
        ? {
            kind: `${type}: missing object (structured)`,
            headers: { 'content-type': 'application/cloudevents+json' },
            body: JSON.stringify({ ...attributes, datacontenttype: 'application/json', data }),
            malformed: false,
          }
        : {
            kind: `${type}: missing object`,
            headers: {
              ...Object.fromEntries(Object.entries(attributes).map(([k, v]) => [`ce-${k}`, v])),
              'content-type': 'application/json',
            },
            body: JSON.stringify(data),
            malformed: false,
          };
      return { request, namespace, name };
    });
}

/** The reason an answer breaks the contract, or undefined. */
function problemWith(response: RawResponse, expectNothingToDo: boolean): string | undefined {
  if (response.status >= 500) return `answered ${response.status} ${response.body.slice(0, 300)}`;
  if (retried(response.status))
    return `answered ${response.status}, which Knative retries: ${response.body.slice(0, 300)}`;
  if (expectNothingToDo && response.status !== 204)
    return `a missing object is nothing to do (204), but answered ${response.status} ${response.body.slice(0, 300)}`;
  if (response.status >= 400) {
    try {
      const { error } = JSON.parse(response.body) as { error?: { reason?: unknown; message?: unknown } };
      if (typeof error?.reason !== 'string' || !/^[A-Z][A-Za-z]+$/.test(error.reason))
        return `no CamelCase reason: ${response.body.slice(0, 300)}`;
      if (typeof error.message !== 'string' || error.message.length < 10)
        return `no clear message: ${response.body.slice(0, 300)}`;
    } catch {
      return `error body is not JSON: ${response.body.slice(0, 300)}`;
    }
  }
  return undefined;
}

describe('HTTP inputs: bad CloudEvents against each function server', () => {
  let sink: Server;
  let sinkUrl: string;
  const servers = new Map<string, RunningFunctionServer>();

  beforeAll(async () => {
    // context.send's target (the sweep's events): accepts and forgets.
    sink = createServer((request, response) => {
      request.resume();
      request.on('end', () => response.writeHead(202).end());
    });
    await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
    sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/ns/default`;
    for (const definition of definitions)
      servers.set(
        definition.name,
        await startFunctionServer({
          definition,
          host: '127.0.0.1',
          port: 0,
          kubeConfig: cluster.kubeConfig,
          env: {
            BMH_NAMESPACE: cluster.namespace,
            SWEEP_NAMESPACES: cluster.namespace,
            // image-verify reads from a store: one that is not there (nothing is ever read: every image is missing).
            S3_ENDPOINT: 'http://127.0.0.1:9',
            S3_BUCKET: 'images',
            S3_ACCESS_KEY_ID: 'none',
            S3_SECRET_ACCESS_KEY: 'none',
            // image-verify signs the download URLs it writes (docs/images.md): one key of 32 characters.
            IMAGE_URL_KEYS: `test:${'k'.repeat(32)}`,
          },
          sink: sinkUrl,
          log: silentLogger,
          tracing: false,
          processMetrics: false,
        }),
      );
  });

  afterAll(async () => {
    for (const server of servers.values()) await server.close();
    await new Promise<void>((resolve) => sink?.close(() => resolve()));
  });

  it.each(definitions.map((d) => [d.name]))(
    '%s: never a 5xx, never a retried status, never a crash; a missing object is a 204',
    async (name) => {
      const server = servers.get(name)!;
      const accepts = Object.keys(definitions.find((d) => d.name === name)!.events);
      const problems: string[] = [];
      const statuses = new Map<number, number>();
      let tried = 0;
      let crashed = 0;
      const send = async (request: HostileRequest, nothingToDo: boolean) => {
        let response: RawResponse;
        try {
          response = await rawPost(server.url, request.headers, request.body);
        } catch (error) {
          // No answer: the server is broken if it no longer answers its probe either.
          const alive = await rawGet(`${server.url}/health/liveness`).then(
            (s) => s === 200,
            () => false,
          );
          tried++;
          if (!alive) crashed++;
          tally.add('HTTP inputs', {
            injected: 1,
            recovered: alive ? 1 : 0,
            lost: 0,
            crashed: alive ? 0 : 1,
          });
          if (!alive)
            problems.push(
              `${request.kind}: no answer (${String(error)}), server down, for ${show(request.body)}`,
            );
          return;
        }
        tried++;
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        const problem = problemWith(response, nothingToDo);
        const fiveXx = response.status >= 500;
        tally.add('HTTP inputs', {
          injected: 1,
          recovered: problem ? 0 : 1,
          lost: fiveXx ? 1 : 0,
          crashed: 0,
        });
        if (problem)
          problems.push(
            `POST / ${JSON.stringify(request.headers).slice(0, 400)} body ${show(request.body)} (${request.kind}): ${problem}`,
          );
      };
      await fc.assert(
        fc.asyncProperty(hostileEvents(name, accepts), (request) => send(request, false)),
        {
          seed: resilienceSeed,
          numRuns: hostilePerFunction,
          endOnFailure: false,
          interruptAfterTimeLimit: timeLimitMs,
        },
      );
      await fc.assert(
        fc.asyncProperty(missingReferences(name, accepts), ({ request }) => send(request, true)),
        {
          seed: resilienceSeed,
          numRuns: missingPerFunction,
          endOnFailure: false,
          interruptAfterTimeLimit: timeLimitMs,
        },
      );
      const alive = await rawGet(`${server.url}/health/liveness`).catch(() => 0);
      const ready = await rawGet(`${server.url}/health/readiness`).catch(() => 0);
      if (alive !== 200 || ready !== 200) {
        crashed++;
        tally.add('HTTP inputs', { injected: 0, recovered: 0, lost: 0, crashed: 1 });
      }
      tally.note(
        `${name}: ${tried} bad CloudEvents; answers ${[...statuses.entries()]
          .sort(([a], [b]) => a - b)
          .map(([s, n]) => `${s}×${n}`)
          .join(' ')}`,
      );
      expect(problems.slice(0, 10)).toEqual([]);
      expect(crashed).toBe(0);
      expect(tried).toBeGreaterThanOrEqual((hostilePerFunction + missingPerFunction) * 0.98);
    },
    300_000,
  );
});
