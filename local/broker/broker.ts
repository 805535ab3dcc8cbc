import { EventEmitter, setMaxListeners } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { createLogger, type Logger } from '../../shared/log.js';
import { ConcurrencyLimiter } from './concurrency.js';
import type { BrokerEvents, DeliveryRecord } from './delivery-record.js';
import { deliverToTrigger, ttlExtension, type DispatcherDeps, type IngestResult } from './dispatcher.js';
import type { RawEvent } from '../../shared/cloudevents/http-codec.js';
import { createAgents, destroyAgents } from './http-sender.js';
import { createIngressHandler } from './ingress.js';
import { loadBrokerConfig, type RefResolver, type ResolvedBroker } from './load-config.js';
import { createBrokerMetrics } from './metrics.js';
import type { TraceContext } from './trace-context.js';

/** Knative's broker ingress default (`MAX_TTL`). */
export const defaultBrokerTtl = 255;

export interface StartBrokerOptions {
  /** Bind address; loopback unless told otherwise. */
  host?: string;
  /** 0 (default) picks a free port. */
  port?: number;
  /**
   * A server already listening (the embedded stack binds its port before the functions that
   * post to it start): the broker answers on it instead of binding `port`, and closes it.
   */
  server?: http.Server;
  /** Kubernetes objects as parsed from YAML; Brokers and Triggers are picked out. */
  objects: readonly unknown[];
  resolveRef: RefResolver;
  defaultNamespace?: string;
  log?: Logger;
  /** Prometheus registry to register on; the broker makes its own otherwise. */
  registry?: Registry;
  /** Concurrent outbound requests (subscribers and dead-letter sinks). Default 128. */
  maxConcurrency?: number;
  /** How long `close()` waits for in-flight deliveries before aborting them. Default 5000 ms. */
  drainTimeoutMs?: number;
  onDelivery?: (record: DeliveryRecord) => void;
}

export interface RunningBroker {
  /** `http://host:port`. */
  url: string;
  ingressUrl(namespace: string, name: string): string;
  brokers: readonly ResolvedBroker[];
  registry: Registry;
  /** One `delivery` event per attempt outcome (see DeliveryRecord). */
  on(event: 'delivery', listener: (record: DeliveryRecord) => void): void;
  off(event: 'delivery', listener: (record: DeliveryRecord) => void): void;
  /** Deliveries and retries still running. */
  inFlight(): number;
  /** Stops the ingress, waits (bounded) for in-flight deliveries, then aborts the rest. */
  close(): Promise<void>;
}

/** TTL rules of `broker.TTLDefaulter`: absent or not an integer → default; else −1, floored at 0. */
export function nextTtl(current: string | undefined): number {
  if (current === undefined) return defaultBrokerTtl;
  const parsed = Number(current.trim());
  if (current.trim() === '' || !Number.isInteger(parsed)) return defaultBrokerTtl;
  return Math.max(parsed - 1, 0);
}

/** Starts the embedded broker: Knative's MT-broker data plane, in memory, on one port. */
export async function startBroker(options: StartBrokerOptions): Promise<RunningBroker> {
  const log = options.log ?? createLogger({ base: { component: 'broker' } });
  const brokers = await loadBrokerConfig(options.objects, {
    resolveRef: options.resolveRef,
    ...(options.defaultNamespace ? { defaultNamespace: options.defaultNamespace } : {}),
    log,
  });
  const byKey = new Map(brokers.map((broker) => [`${broker.namespace}/${broker.name}`, broker]));
  const metrics = createBrokerMetrics(options.registry);
  const emitter = new EventEmitter<BrokerEvents>();
  if (options.onDelivery) emitter.on('delivery', options.onDelivery);
  const agents = createAgents();
  const shutdown = new AbortController();
  // Every pending request and backoff listens for shutdown.
  setMaxListeners(0, shutdown.signal);
  let baseUrl = '';

  const ingressUrl = (broker: { namespace: string; name: string }) =>
    `${baseUrl}/${broker.namespace}/${broker.name}`;

  // Deliveries in flight, counted rather than kept: close() waits for the count to reach zero.
  let inFlight = 0;
  let drainWaiters: (() => void)[] = [];
  const deliveryDone = () => {
    inFlight -= 1;
    if (inFlight === 0) {
      const waiters = drainWaiters;
      drainWaiters = [];
      for (const wake of waiters) wake();
    }
  };
  const drained = () =>
    inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => drainWaiters.push(resolve));

  const ingest = (broker: ResolvedBroker, incoming: RawEvent, trace: TraceContext): IngestResult => {
    const ttl = nextTtl(incoming.attributes[ttlExtension]);
    const type = incoming.attributes.type ?? '';
    if (ttl <= 0) {
      metrics.ingressEvents.series(broker.namespace, broker.name, type, '400').inc();
      log.info('event dropped: TTL exhausted', {
        broker: `${broker.namespace}/${broker.name}`,
        eventId: incoming.attributes.id,
      });
      return { status: 400, reason: 'TTL exhausted' };
    }
    // Filters and subscribers see the event without the TTL; the broker keeps the TTL beside it
    // (for replies and dead letters).
    const attributes: Record<string, string> = {};
    for (const name in incoming.attributes) {
      if (name !== ttlExtension) attributes[name] = incoming.attributes[name]!;
    }
    attributes.knativearrivaltime = new Date().toISOString();
    const event: RawEvent = incoming.data ? { attributes, data: incoming.data } : { attributes };
    metrics.ingressEvents.series(broker.namespace, broker.name, type, '202').inc();
    for (const trigger of broker.triggers) {
      if (trigger.filter(event) === 'fail') continue;
      inFlight += 1;
      void deliverToTrigger(dispatcherDeps, broker, trigger, event, String(ttl), trace).then(
        deliveryDone,
        (error: unknown) => {
          log.error('delivery failed unexpectedly', { trigger: trigger.name, error: String(error) });
          deliveryDone();
        },
      );
    }
    return { status: 202 };
  };

  const dispatcherDeps: DispatcherDeps = {
    agents,
    limiter: new ConcurrencyLimiter(options.maxConcurrency ?? 128),
    metrics,
    signal: shutdown.signal,
    log,
    emit: (record) => emitter.emit('delivery', record),
    recordsWanted: () => emitter.listenerCount('delivery') > 0,
    ingest,
    ingressUrl,
  };

  const handler = createIngressHandler({
    findBroker: (namespace, name) => byKey.get(`${namespace}/${name}`),
    ingest,
    registry: metrics.registry,
    // An unknown broker's namespace and name are whatever path a producer sent: not labels
    // (one series per path would grow without bound).
    countRejected: (namespace, name, status) =>
      status === 404
        ? metrics.ingressEvents.series('', '', '', '404').inc()
        : metrics.ingressEvents.series(namespace, name, '', String(status)).inc(),
    log,
  });
  const serve = (request: http.IncomingMessage, response: http.ServerResponse) => {
    try {
      handler(request, response);
    } catch (error) {
      log.error('ingress handler failed', { error: String(error) });
      if (!response.headersSent) response.writeHead(500);
      response.end();
    }
  };
  const server = options.server ?? http.createServer();
  server.keepAliveTimeout = 65_000;
  server.removeAllListeners('request');
  server.on('request', serve);
  if (!options.server)
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
    });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  baseUrl = `http://${host}:${address.port}`;
  log.info('broker listening', {
    url: baseUrl,
    brokers: brokers.map((b) => `${b.namespace}/${b.name} (${b.triggers.length} triggers)`),
  });

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const drainTimeout = options.drainTimeoutMs ?? 5000;
      const deadline = Date.now() + drainTimeout;
      if (inFlight > 0) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          drained(),
          new Promise((resolve) => (timer = setTimeout(resolve, Math.max(deadline - Date.now(), 0)))),
        ]);
        clearTimeout(timer);
      }
      if (inFlight > 0) log.warn('aborting in-flight deliveries', { count: inFlight });
      shutdown.abort();
      destroyAgents(agents);
      await drained();
      server.closeAllConnections();
      await serverClosed;
    })();
    return closing;
  };

  return {
    url: baseUrl,
    ingressUrl: (namespace, name) => ingressUrl({ namespace, name }),
    brokers,
    registry: metrics.registry,
    on: (_event, listener) => void emitter.on('delivery', listener),
    off: (_event, listener) => void emitter.off('delivery', listener),
    inFlight: () => inFlight,
    close,
  };
}
