/**
 * Runs the functions through their real HTTP servers (127.0.0.1, ephemeral ports) and plays
 * the broker's part in the simplest way: POST an event to every function whose Trigger in
 * manifests/ accepts it (trigger-routes.ts: the Triggers' own filters, run by the embedded
 * broker's filter code), then POST each reply on, until no reply is left. Also plays the
 * ApiServerSource (events built from live objects). Jobs are run by the real Job controller on
 * the run's node (test/support/node.ts); nothing here writes a Job's status.
 *
 * Function-level: a suite here sees every reply of every step. The chain suites that drive
 * everything through the API server, on the embedded broker and on real Knative Eventing, are
 * test/integration/chain/ (test/support/chain-engine.ts).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BatchV1Api, type KubeConfig } from '@kubernetes/client-node';
import { CloudEvent } from 'cloudevents';
import { parseHttpEvent } from '../../../../shared/cloudevents/message.js';
import { postEvent } from '../../../../shared/cloudevents/sink-client.js';
import type { Env } from '../../../../shared/config.js';
import { SourceEventTypes } from '../../../../shared/events/types.js';
import { createLogger, silentLogger, type LogLevel } from '../../../../shared/log.js';
import {
  createNamespace,
  deleteNamespace,
  uniqueNamespaceName,
} from '../../../../local/control-plane/index.js';
import {
  startFunctionServer,
  type RunningFunctionServer,
} from '../../../../shared/server/function-server.js';
import type { FunctionDefinition } from '../../../../shared/server/types.js';
import { routesFor } from './trigger-routes.js';
import { nodeImageEnv } from '../../../support/node.js';

export interface Delivery {
  target: string;
  event: CloudEvent<unknown>;
  status: number;
  reply?: CloudEvent<unknown>;
  body: string;
}

/** Collects what functions send with context.send() (the sweep), as a broker ingress would. */
export class EventCollector {
  readonly events: CloudEvent<unknown>[] = [];
  private server?: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const parsed = parseHttpEvent(request.headers as Record<string, string>, Buffer.concat(chunks));
        if (parsed.ok) this.events.push(parsed.event);
        response.writeHead(parsed.ok ? 202 : 400).end();
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/ns/default`;
  }

  /** Takes (and forgets) what was collected so far. */
  drain(): CloudEvent<unknown>[] {
    return this.events.splice(0, this.events.length);
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** Which functions the Triggers of manifests/ send an event to (see trigger-routes.ts). */
export { routesFor };

/**
 * The functions' logs: dropped, unless BPA_TEST_LOG names a level (debug, info, warn, error);
 * then each line goes to stderr with its function's name, to see why a step answered as it did.
 */
function harnessLogger(functionName: string) {
  const level = process.env.BPA_TEST_LOG as LogLevel | undefined;
  if (!level) return silentLogger;
  return createLogger({
    level,
    base: { function: functionName },
    sink: (line) => process.stderr.write(line + '\n'),
  });
}

export class ChainHarness {
  readonly servers = new Map<string, RunningFunctionServer>();
  readonly collector = new EventCollector();
  /** Every delivery made, in order. */
  readonly deliveries: Delivery[] = [];

  constructor(
    private readonly kubeConfig: KubeConfig,
    env: Env = {},
  ) {
    // The suites' SSH hosts listen on this machine's loopback, which an install Job's pod on the
    // node cannot reach (INSTALL_RUNNER=job, the default): software-install's SSH step runs in the
    // request unless a suite asks for the Job path. The Job path runs for real on the node in
    // test/integration/node/software-job.test.ts and in the demo (test/e2e/demo.test.ts).
    // The suites drive sweeps one ping at a time: every ping sweeps (SWEEP_INTERVAL_SECONDS=0);
    // the one-sweep-per-interval rule has its own tests (test/resilience/hostile-tenant-rbac.test.ts).
    // The node's images first: the Jobs the functions create must name images it holds.
    this.env = { ...nodeImageEnv(), INSTALL_RUNNER: 'in-request', SWEEP_INTERVAL_SECONDS: '0', ...env };
  }
  private env: Env;

  /** The functions' own namespace (cluster-name claims, kud-installer) when the env names none. */
  private ownNamespace?: string;

  /**
   * The functions' namespace (FUNCTIONS_NAMESPACE: the env's, else the harness's own, made by
   * start()): the KUD, cleanup and publisher Jobs run there and mount what is written there
   * (contract section 12), among it the operator's SSH key Secret a suite creates.
   */
  get functionsNamespace(): string {
    const namespace = this.env.FUNCTIONS_NAMESPACE;
    if (!namespace) throw new Error('ChainHarness.functionsNamespace: read it after start()');
    return namespace;
  }

  async start<C extends unknown[]>(definitions: { [K in keyof C]: FunctionDefinition<C[K]> }): Promise<void> {
    await this.collector.start();
    if (!this.env.FUNCTIONS_NAMESPACE) {
      // One per harness, so cluster names of one test file never claim those of another.
      this.ownNamespace = await createNamespace(this.kubeConfig, uniqueNamespaceName('bpa-functions'));
      this.env = { ...this.env, FUNCTIONS_NAMESPACE: this.ownNamespace };
    }
    for (const definition of definitions as FunctionDefinition<unknown>[]) {
      const server = await startFunctionServer({
        definition,
        host: '127.0.0.1',
        port: 0,
        kubeConfig: this.kubeConfig,
        env: this.env,
        sink: this.collector.url,
        log: harnessLogger(definition.name),
        tracing: false,
        processMetrics: false,
      });
      this.servers.set(definition.name, server);
    }
  }

  async stop(): Promise<void> {
    for (const server of this.servers.values()) await server.close();
    await this.collector.stop();
    if (this.ownNamespace) await deleteNamespace(this.kubeConfig, this.ownNamespace);
  }

  url(name: string): string {
    const server = this.servers.get(name);
    if (!server) throw new Error(`function ${name} is not started`);
    return server.url;
  }

  /** One POST to one function. */
  async deliver(target: string, event: CloudEvent<unknown>): Promise<Delivery> {
    const response = await postEvent(this.url(target), event, { timeoutMs: 120_000 });
    const delivery: Delivery = {
      target,
      event,
      status: response.status,
      body: response.body.toString('utf8'),
      ...(response.replyEvent ? { reply: response.replyEvent } : {}),
    };
    this.deliveries.push(delivery);
    return delivery;
  }

  /**
   * Delivers the event to every started function whose Trigger takes it, then each reply the
   * same way, breadth first, until nothing is left. Returns every delivery made.
   */
  async publish(event: CloudEvent<unknown>): Promise<Delivery[]> {
    const made: Delivery[] = [];
    const queue = [event];
    while (queue.length > 0) {
      const next = queue.shift() as CloudEvent<unknown>;
      for (const target of routesFor(next).filter((name) => this.servers.has(name))) {
        const delivery = await this.deliver(target, next);
        made.push(delivery);
        if (delivery.reply) queue.push(delivery.reply);
      }
    }
    return made;
  }

  /** Every reply of the given type seen so far. */
  replies(type: string): CloudEvent<unknown>[] {
    return this.deliveries.flatMap((d) => (d.reply?.type === type ? [d.reply] : []));
  }
}

/** What Knative's ApiServerSource (mode Resource) emits for an object. */
export function sourceEvent(
  type: 'add' | 'update',
  object: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } },
): CloudEvent<unknown> {
  const plural = object.kind.toLowerCase().endsWith('s')
    ? `${object.kind.toLowerCase()}es`
    : `${object.kind.toLowerCase()}s`;
  return new CloudEvent<unknown>({
    type: `dev.knative.apiserver.resource.${type}`,
    source: 'https://127.0.0.1:6443',
    subject: `/apis/${object.apiVersion}/namespaces/${object.metadata.namespace}/${plural}/${object.metadata.name}`,
    datacontenttype: 'application/json',
    data: object,
    kind: object.kind,
    name: object.metadata.name,
    namespace: object.metadata.namespace ?? '',
    apiversion: object.apiVersion,
  });
}

export const pingEvent = () =>
  new CloudEvent<unknown>({
    type: SourceEventTypes.ping,
    source: '/apis/v1/namespaces/bpa-system/pingsources/sweep',
    datacontenttype: 'application/json',
    data: { sweep: true },
  });

/** The live Job as an update event (what the Job ApiServerSource sends after a status change). */
export async function jobUpdateEvent(kubeConfig: KubeConfig, namespace: string, name: string) {
  const batch = kubeConfig.makeApiClient(BatchV1Api);
  const job = await batch.readNamespacedJob({ name, namespace });
  // The source sends the object as the API server serialises it (JSON, strings for times).
  const data = JSON.parse(JSON.stringify(job)) as {
    apiVersion?: string;
    kind?: string;
    metadata: { name: string };
  };
  return sourceEvent('update', { ...data, apiVersion: 'batch/v1', kind: 'Job' });
}
