import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';
import type { CloudEvent } from 'cloudevents';
import { parseEnv, serverEnvSchema, type Env } from '../config.js';
import { describeError } from '../errors.js';
import { createLogger, type Logger } from '../log.js';
import { parseHttpEvent } from '../cloudevents/message.js';
import { FunctionMetrics, RuntimeMetrics, type InvocationOutcome } from '../telemetry/metrics.js';
import { Tracing, traceIdOf, type TraceHeaders } from '../telemetry/tracing.js';
import { acceptedTypes, routeEvent, unacceptedType, type EventProblem } from './accepts.js';
import { eventLogFields } from './event-scope.js';
import { readBody } from './http-body.js';
import { invoke } from './invoke.js';
import { RequestTrace } from './request-span.js';
import { errorBody, responder } from './responses.js';
import { OwnWrites } from '../k8s/own-writes.js';
import { WatchedObjects } from '../k8s/watched-objects.js';
import { ObjectQueue } from './object-queue.js';
import { routeRequest } from './routes.js';
import type { FunctionContext, FunctionDefinition } from './types.js';
import type { Sink } from './sink.js';

/**
 * The function server: one FunctionDefinition over HTTP, the Knative Functions way.
 *
 *   POST /                 a CloudEvent, binary or structured mode → the handler
 *                          200 + the reply CloudEvent in binary mode, or 204 with an empty body;
 *                          400 + {"error":{"reason","message"}} for anything that is not an
 *                          acceptable event (the broker does not retry 4xx, which is right for
 *                          poison events); a thrown error → httpStatusFor() + the same JSON shape
 *   OPTIONS /              200, Allow: POST, OPTIONS (and the CloudEvents webhook handshake)
 *   GET /health/readiness  200, or 503 while draining after close()/SIGTERM
 *   GET /health/liveness   200
 *   GET /metrics           Prometheus text (per-server registry)
 *
 * A body over the limit is answered 400 `BodyTooLarge`, not 413: Knative sources retry 413
 * (and the broker would dead-letter it anyway), while an oversized event never gets smaller,
 * so it is treated like any other poison event.
 */

export interface FunctionServerOptions<Config> {
  definition: FunctionDefinition<Config>;
  /** Default HOST from env, else 0.0.0.0. Tests and the local stack pass 127.0.0.1. */
  host?: string;
  /** Default PORT from env, else 8080. 0 picks a free port. */
  port?: number;
  /** Handed to the handler as is; the server itself never calls Kubernetes. */
  kubeConfig: KubeConfig;
  /** Where config is read from (function config, K_SINK/BROKER_URL, OTEL_*). Default process.env. */
  env?: Env;
  log?: Logger;
  /** Target of context.send(); default K_SINK, else BROKER_URL. */
  sink?: string;
  /** Record Prometheus metrics (default true). `false` is for overhead benchmarks. */
  metrics?: boolean;
  /** Include process_/nodejs_ default metrics (default true). */
  processMetrics?: boolean;
  /** A tracing setup (tests pass span processors), or false for none at all. Default: from OTEL_* env. */
  tracing?: Tracing | false;
  /** Largest request body in bytes. Default MAX_BODY_BYTES, else 1 MiB. */
  maxBodyBytes?: number;
  /** How long close() lets in-flight requests run. Default SHUTDOWN_GRACE_SECONDS, else 30 s. */
  shutdownGraceMs?: number;
}

export interface RunningFunctionServer {
  /** e.g. http://127.0.0.1:43121 */
  url: string;
  port: number;
  /** Stops accepting, lets in-flight requests finish (within the grace period), flushes traces. */
  close(): Promise<void>;
  /** The server's metrics (domain metrics included). Undefined when metrics are off. */
  metrics?: FunctionMetrics;
}

const elapsedSeconds = (since: bigint) => Number(process.hrtime.bigint() - since) / 1e9;

const firstHeader = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

function urlFor(host: string, port: number): string {
  if (host === '0.0.0.0' || host === '') return `http://127.0.0.1:${port}`;
  if (host === '::') return `http://[::1]:${port}`;
  return host.includes(':') ? `http://[${host}]:${port}` : `http://${host}:${port}`;
}

/** How long the server keeps an idle keep-alive connection open (see startFunctionServer). */
const keepAliveTimeoutMs = 72_000;

/** Starts the server; rejects with BpaError `InvalidConfig` when the env does not validate. */
export async function startFunctionServer<Config>(
  options: FunctionServerOptions<Config>,
): Promise<RunningFunctionServer> {
  const startedAt = process.hrtime.bigint();
  const { definition } = options;
  const env = options.env ?? process.env;
  const serverEnv = parseEnv(serverEnvSchema, env, `the ${definition.name} function server`);
  const config = parseEnv(definition.configSchema, env, definition.name);
  const queue = new ObjectQueue();
  const ownWrites = new OwnWrites();
  const log = (options.log ?? createLogger()).child({ function: definition.name });
  const watchSources = definition.watches?.(config) ?? [];
  const watched =
    watchSources.length > 0 ? new WatchedObjects(options.kubeConfig, watchSources, log) : undefined;
  const sink: Sink = {
    url: options.sink ?? serverEnv.K_SINK ?? serverEnv.BROKER_URL,
    tokenFile: serverEnv.SINK_TOKEN_FILE,
  };
  const maxBodyBytes = options.maxBodyBytes ?? serverEnv.MAX_BODY_BYTES;
  const graceMs = options.shutdownGraceMs ?? serverEnv.SHUTDOWN_GRACE_SECONDS * 1000;

  const metrics = options.metrics === false ? undefined : new FunctionMetrics();
  const runtimeMetrics = metrics
    ? new RuntimeMetrics(metrics, definition.name, startedAt, { processMetrics: options.processMetrics })
    : undefined;
  if (metrics && definition.metrics) metrics.register(definition.metrics);
  const tracing =
    options.tracing === false
      ? undefined
      : (options.tracing ?? (await Tracing.create({ serviceName: definition.name, env, log })));
  const accepted = acceptedTypes(definition);

  let draining = false;
  let inFlight = 0;
  const respond = responder(() => draining);

  /** POST /: one CloudEvent in, reply or nothing out. */
  const handleEvent = async (request: IncomingMessage, response: ServerResponse) => {
    const requestStart = process.hrtime.bigint();
    const trace = new RequestTrace(tracing, log, new Date());
    // What the `finally` below reports; every path sets it.
    const state: { eventType: string; outcome: InvocationOutcome; status: number; reason?: string } = {
      eventType: 'unknown',
      outcome: 'invalid',
      status: 500,
    };
    const headerTrace: TraceHeaders = {
      traceparent: firstHeader(request.headers.traceparent),
      tracestate: firstHeader(request.headers.tracestate),
    };
    const reject = (status: number, problem: EventProblem) => {
      state.status = status;
      state.reason = problem.reason;
      state.outcome = 'invalid';
      if (!trace.span) trace.start(`${definition.name} rejected`, headerTrace, {});
      trace.span?.setAttributes({ 'bpa.rejection.reason': problem.reason });
      trace.span?.fail(problem.message);
      respond.error(response, status, problem.reason, problem.message, trace.responseHeaders());
    };

    try {
      const body = await readBody(request, maxBodyBytes);
      if (body.kind === 'aborted') {
        state.status = 499;
        state.reason = 'ClientClosedRequest';
        state.outcome = 'invalid';
        return;
      }
      if (body.kind === 'tooLarge') {
        if (!body.drained) response.setHeader('connection', 'close');
        reject(400, {
          reason: 'BodyTooLarge',
          message: `The request body is larger than ${maxBodyBytes} bytes; events should carry references, not documents`,
        });
        return;
      }
      const parsed = parseHttpEvent(request.headers, body.body);
      if (!parsed.ok) {
        reject(400, parsed);
        return;
      }
      const event = parsed.event;
      trace.logFields = { ...eventLogFields(event) };
      const unaccepted = unacceptedType(definition, event.type);
      if (unaccepted) {
        reject(400, unaccepted);
        return;
      }
      state.eventType = event.type;
      const parent = requestTraceParent(event, headerTrace);
      const spanName = `${definition.name} ${event.type}`;
      const eventAttributes: Record<string, string> = {
        'cloudevents.event_id': event.id,
        'cloudevents.event_type': event.type,
        'cloudevents.event_source': event.source,
        ...(event.subject ? { 'cloudevents.event_subject': event.subject } : {}),
      };
      trace.start(spanName, parent, eventAttributes);
      const routing = routeEvent(definition, event);
      if ('problem' in routing) {
        reject(400, routing.problem);
        return;
      }

      const context: FunctionContext<Config> = {
        functionName: definition.name,
        log: trace.log,
        kubeConfig: options.kubeConfig,
        config,
        send: trace.sender(definition.name, sink),
        ...(parent.traceparent ? { traceparent: parent.traceparent } : {}),
        ...(metrics ? { metrics } : {}),
        queue,
        ownWrites,
        ...(watched ? { watched } : {}),
        continueTrace: (traceparent, tracestate) => {
          if (!trace.continueIn(traceparent, tracestate, spanName, eventAttributes)) return false;
          context.log = trace.log;
          context.send = trace.sender(definition.name, sink);
          context.traceparent = traceparent;
          return true;
        },
      };
      const answer = await invoke(definition.name, () => routing.routed.run(context), trace);
      state.status = answer.status;
      state.outcome = answer.outcome;
      if (answer.reason) state.reason = answer.reason;
      if (answer.reply) {
        const { event: reply, headers, body: replyBody } = answer.reply;
        trace.logFields = { ...trace.logFields, reply_id: reply.id, reply_type: reply.type };
        respond.respond(response, 200, { ...headers, ...trace.responseHeaders() }, replyBody);
      } else if (answer.status === 204) respond.respond(response, 204, trace.responseHeaders());
      else
        respond.error(
          response,
          answer.status,
          answer.reason ?? '',
          answer.message ?? '',
          trace.responseHeaders(),
        );
    } finally {
      const seconds = elapsedSeconds(requestStart);
      runtimeMetrics?.record(state.eventType, state.outcome, seconds);
      if (trace.span) {
        trace.span.setAttributes({ 'http.response.status_code': state.status });
        trace.span.end();
      }
      const line = {
        ...trace.logFields,
        status: state.status,
        outcome: state.outcome,
        duration_ms: Math.round(seconds * 1e6) / 1e3,
        ...(state.reason ? { reason: state.reason } : {}),
      };
      if (state.status >= 500) log.error('event', line);
      else if (state.status >= 400) log.warn('event', line);
      else log.info('event', line);
    }
  };

  const server = createServer((request, response) => {
    inFlight += 1;
    response.once('close', () => {
      inFlight -= 1;
    });
    routeRequest(request, response, {
      respond,
      draining: () => draining,
      event: handleEvent,
      ...(metrics ? { metrics } : {}),
    }).catch((error: unknown) => {
      // A bug in the server itself: answer 500 and keep serving.
      log.error('request failed', { ...describeError(error), stack: (error as Error)?.stack });
      respond.error(response, 500, 'InternalError', describeError(error).message);
    });
  });
  // Idle keep-alive connections stay open 72 s, not Node's 5 s: the senders (Knative's broker,
  // the embedded broker) pool connections and keep them idle longer than that, and a server that
  // closes one first races the sender's next POST on it, which is reset ("socket hang up") and
  // retried as a failed delivery. faas-js-runtime's fastify uses 72 s for the same reason.
  server.keepAliveTimeout = keepAliveTimeoutMs;
  // Bytes that are not HTTP: answer 400 the way Node would, and keep serving.
  server.on('clientError', (_error, socket) => {
    if (socket.writable) {
      const body = errorBody('BadRequest', 'The request is not valid HTTP');
      socket.end(
        `HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
    } else socket.destroy();
  });

  const host = options.host ?? serverEnv.HOST;
  const port = options.port ?? serverEnv.PORT;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const boundPort = (server.address() as AddressInfo).port;
  const url = urlFor(host, boundPort);
  log.info('function server ready', {
    url,
    accepts: accepted,
    sink: sink.url ?? null,
    tracing_export: tracing?.exporting ?? false,
    startup_ms: Math.round(elapsedSeconds(startedAt) * 1e6) / 1e3,
  });

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      draining = true;
      log.info('function server draining', { in_flight: inFlight, grace_ms: graceMs });
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const deadline = setTimeout(() => {
        log.warn('grace period over, closing remaining connections', { in_flight: inFlight });
        server.closeAllConnections();
      }, graceMs);
      deadline.unref();
      await closed;
      clearTimeout(deadline);
      await watched?.stop();
      await definition
        .release?.(options.kubeConfig)
        .catch((error: unknown) => log.warn('release failed', describeError(error)));
      await tracing
        ?.shutdown()
        .catch((error: unknown) => log.warn('trace flush failed', describeError(error)));
      log.info('function server stopped');
    })();
    return closing;
  };

  return { url, port: boundPort, close, ...(metrics ? { metrics } : {}) };
}

/**
 * The trace a request continues: the event's distributed-tracing extension when it holds a valid
 * traceparent, else the HTTP headers. The extension is the producer's and every broker leaves it
 * as it is; the header is the transport's: Knative's broker keeps, replaces (tracing on) or
 * leaves it out (tracing off, nothing came in), and sends a reply on in the trace of the delivery
 * that produced it, not the one the reply names (docs/knative.md "Trace context").
 */
export function requestTraceParent(event: CloudEvent<unknown>, headers: TraceHeaders): TraceHeaders {
  const extension = typeof event['traceparent'] === 'string' ? event['traceparent'] : undefined;
  if (traceIdOf(extension) === undefined) return headers;
  const tracestate = typeof event['tracestate'] === 'string' ? event['tracestate'] : undefined;
  return { traceparent: extension, ...(tracestate ? { tracestate } : {}) };
}
