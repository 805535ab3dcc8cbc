import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CloudEvent } from 'cloudevents';
import type { KubeConfig } from '@kubernetes/client-node';
import { parseEnv, serverEnvSchema, type Env } from '../config.js';
import { BpaError, describeError, httpStatusFor } from '../errors.js';
import { createLogger, type Logger } from '../log.js';
import { encodeHttpEvent, parseHttpEvent } from '../cloudevents/message.js';
import { postEventWithRetry } from '../cloudevents/sink-client.js';
import { FunctionMetrics, RuntimeMetrics, type InvocationOutcome } from '../telemetry/metrics.js';
import { Tracing, traceIdOf, type RequestSpan, type TraceHeaders } from '../telemetry/tracing.js';
import { acceptedTypes, routeEvent, unacceptedType } from './accepts.js';
import { eventLogFields } from './event-scope.js';
import { readBody } from './http-body.js';
import type { FunctionContext, FunctionDefinition } from './types.js';

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

interface Rejection {
  status: number;
  reason: string;
  message: string;
}

/** JSON body of every error answer. */
export const errorBody = (reason: string, message: string) => JSON.stringify({ error: { reason, message } });

const elapsedSeconds = (since: bigint) => Number(process.hrtime.bigint() - since) / 1e9;

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function urlFor(host: string, port: number): string {
  if (host === '0.0.0.0' || host === '') return `http://127.0.0.1:${port}`;
  if (host === '::') return `http://[::1]:${port}`;
  return host.includes(':') ? `http://[${host}]:${port}` : `http://${host}:${port}`;
}

/**
 * Posts `event` to the sink (K_SINK / BROKER_URL) with retries and resolves to the HTTP status;
 * rejects `NoSinkConfigured` without a sink and `SinkRejected` on a non-2xx answer. Shared by
 * the server's `context.send` and the faas-js-runtime adapter.
 */
export async function postToSink(
  functionName: string,
  sinkUrl: string | undefined,
  event: CloudEvent<unknown>,
  headers: Record<string, string> = {},
): Promise<number> {
  if (!sinkUrl) {
    throw new BpaError(
      'NoSinkConfigured',
      `${functionName} cannot send ${event.type}: neither K_SINK nor BROKER_URL is set`,
      'internal',
    );
  }
  const response = await postEventWithRetry(sinkUrl, event, { headers });
  if (response.status < 200 || response.status > 299) {
    throw new BpaError(
      'SinkRejected',
      `The sink ${sinkUrl} answered HTTP ${response.status} to ${event.type} ${event.id}`,
      'transient',
    );
  }
  return response.status;
}

/** Starts the server; rejects with BpaError `InvalidConfig` when the env does not validate. */
export async function startFunctionServer<Config>(
  options: FunctionServerOptions<Config>,
): Promise<RunningFunctionServer> {
  const startedAt = process.hrtime.bigint();
  const { definition } = options;
  const env = options.env ?? process.env;
  const serverEnv = parseEnv(serverEnvSchema, env, `the ${definition.name} function server`);
  const config = parseEnv(definition.configSchema, env, definition.name);
  const log = (options.log ?? createLogger()).child({ function: definition.name });
  const sinkUrl = options.sink ?? serverEnv.K_SINK ?? serverEnv.BROKER_URL;
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

  const respond = (
    response: ServerResponse,
    status: number,
    headers: Record<string, string>,
    body: string | Uint8Array = '',
  ) => {
    if (response.headersSent || response.destroyed) return;
    if (draining) headers = { ...headers, connection: 'close' };
    response.writeHead(status, headers);
    response.end(body);
  };
  const respondJson = (
    response: ServerResponse,
    status: number,
    value: unknown,
    headers: Record<string, string> = {},
  ) => respond(response, status, { 'content-type': 'application/json', ...headers }, JSON.stringify(value));
  const respondError = (
    response: ServerResponse,
    status: number,
    reason: string,
    message: string,
    headers: Record<string, string> = {},
  ) =>
    respond(response, status, { 'content-type': 'application/json', ...headers }, errorBody(reason, message));

  /** Sends an extra event to the sink, continuing the request's trace. */
  const makeSend =
    (span: RequestSpan | undefined, requestLog: Logger) =>
    async (event: CloudEvent<unknown>): Promise<void> => {
      const child =
        span && tracing
          ? tracing.startClientSpan(`send ${event.type}`, span, {
              'cloudevents.event_id': event.id,
              'cloudevents.event_type': event.type,
            })
          : undefined;
      try {
        const outgoing = child ? event.cloneWith({ ...child.headers }) : event;
        const status = await postToSink(
          definition.name,
          sinkUrl,
          outgoing,
          child ? { ...child.headers } : {},
        );
        requestLog.debug('sent event', { sent_id: event.id, sent_type: event.type, status });
      } catch (error) {
        child?.fail(describeError(error).message);
        throw error;
      } finally {
        child?.end();
      }
    };

  /** POST /: one CloudEvent in, reply or nothing out. */
  const handleEvent = async (request: IncomingMessage, response: ServerResponse) => {
    const requestStart = process.hrtime.bigint();
    const startTime = new Date();
    // Mutable request state in one object: closures below update it and `finally` reads it.
    const state: {
      eventType: string;
      outcome: InvocationOutcome;
      status: number;
      reason?: string;
      span?: RequestSpan;
      log: Logger;
      logFields: Record<string, unknown>;
    } = { eventType: 'unknown', outcome: 'invalid', status: 500, log, logFields: {} };
    const headerTrace: TraceHeaders = {
      traceparent: firstHeader(request.headers.traceparent),
      tracestate: firstHeader(request.headers.tracestate),
    };
    const startSpan = (
      name: string,
      parent: TraceHeaders,
      attributes: Record<string, string>,
      linkedTo: readonly RequestSpan[] = [],
    ) => {
      state.span = tracing?.startServerSpan(
        name,
        parent,
        { 'faas.trigger': 'pubsub', ...attributes },
        startTime,
        linkedTo,
      );
      // With tracing off there is no span, but the caller's trace id still goes on the logs.
      const traceId = state.span?.traceId ?? traceIdOf(parent.traceparent);
      if (traceId) state.logFields = { ...state.logFields, trace_id: traceId };
      state.log = log.child(state.logFields);
    };
    const traceResponseHeaders = (): Record<string, string> => (state.span ? { ...state.span.headers } : {});
    const reject = (rejection: Rejection) => {
      state.status = rejection.status;
      state.reason = rejection.reason;
      state.outcome = 'invalid';
      if (!state.span) startSpan(`${definition.name} rejected`, headerTrace, {});
      state.span?.setAttributes({ 'bpa.rejection.reason': rejection.reason });
      state.span?.fail(rejection.message);
      respondError(response, rejection.status, rejection.reason, rejection.message, traceResponseHeaders());
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
        reject({
          status: 400,
          reason: 'BodyTooLarge',
          message: `The request body is larger than ${maxBodyBytes} bytes; events should carry references, not documents`,
        });
        return;
      }
      const parsed = parseHttpEvent(request.headers, body.body);
      if (!parsed.ok) {
        reject({ status: 400, reason: parsed.reason, message: parsed.message });
        return;
      }
      const event = parsed.event;
      state.logFields = { ...eventLogFields(event) };
      const unaccepted = unacceptedType(definition, event.type);
      if (unaccepted) {
        reject({ status: 400, ...unaccepted });
        return;
      }
      state.eventType = event.type;
      const parent: TraceHeaders = headerTrace.traceparent
        ? headerTrace
        : {
            traceparent: typeof event['traceparent'] === 'string' ? event['traceparent'] : undefined,
            tracestate: typeof event['tracestate'] === 'string' ? event['tracestate'] : undefined,
          };
      const spanName = `${definition.name} ${event.type}`;
      const eventAttributes: Record<string, string> = {
        'cloudevents.event_id': event.id,
        'cloudevents.event_type': event.type,
        'cloudevents.event_source': event.source,
        ...(event.subject ? { 'cloudevents.event_subject': event.subject } : {}),
      };
      startSpan(spanName, parent, eventAttributes);
      const routing = routeEvent(definition, event);
      if ('problem' in routing) {
        reject({ status: 400, ...routing.problem });
        return;
      }

      const context: FunctionContext<Config> = {
        functionName: definition.name,
        log: state.log,
        kubeConfig: options.kubeConfig,
        config,
        send: makeSend(state.span, state.log),
        ...(parent.traceparent ? { traceparent: parent.traceparent } : {}),
        ...(metrics ? { metrics } : {}),
        continueTrace: (traceparent, tracestate) => {
          const traceId = traceIdOf(traceparent);
          if (traceId === undefined) {
            state.log.warn('malformed traceparent not continued', { traceparent });
            return false;
          }
          const previous = state.span;
          const fromTraceId = state.logFields.trace_id;
          const continued: TraceHeaders = { traceparent, ...(tracestate ? { tracestate } : {}) };
          // The span so far stays in the event's own trace, linked from the one that carries on.
          previous?.setAttributes({ 'bpa.trace.continued_in': traceId });
          previous?.end();
          startSpan(spanName, continued, eventAttributes, previous ? [previous] : []);
          state.log.debug('continuing a recorded trace', { from_trace_id: fromTraceId ?? null });
          context.log = state.log;
          context.send = makeSend(state.span, state.log);
          context.traceparent = traceparent;
          return true;
        },
      };
      let result: unknown;
      try {
        result = await routing.routed.run(context);
      } catch (error) {
        state.status = httpStatusFor(error);
        const described = describeError(error);
        state.reason = described.reason;
        state.outcome = state.status === 400 ? 'invalid' : 'error';
        state.span?.fail(described.message);
        if (state.status >= 500)
          state.log.error('handler failed', { ...described, stack: (error as Error)?.stack });
        respondError(response, state.status, described.reason, described.message, traceResponseHeaders());
        return;
      }

      if (result === undefined || result === null) {
        state.status = 204;
        state.outcome = 'ok';
        respond(response, 204, traceResponseHeaders());
        return;
      }
      let reply: CloudEvent<unknown>;
      try {
        if (!(result instanceof CloudEvent))
          throw new Error('the handler returned something that is not a CloudEvent');
        // The reply continues the trace: distributed-tracing extension + (below) the HTTP header.
        reply = state.span ? result.cloneWith({ ...state.span.headers }) : result;
        if (reply.validate() !== true) throw new Error(`unsupported specversion ${reply.specversion}`);
      } catch (error) {
        state.status = 500;
        state.reason = 'InvalidReply';
        state.outcome = 'error';
        const message = `${definition.name} produced an invalid reply event: ${describeError(error).message.split('\n')[0]}`;
        state.span?.fail(message);
        state.log.error('invalid reply', { reason: state.reason, message });
        respondError(response, 500, state.reason, message, traceResponseHeaders());
        return;
      }
      const message = encodeHttpEvent(reply, 'binary');
      state.status = 200;
      state.outcome = 'reply';
      state.logFields = { ...state.logFields, reply_id: reply.id, reply_type: reply.type };
      respond(response, 200, { ...message.headers, ...traceResponseHeaders() }, message.body);
    } finally {
      const seconds = elapsedSeconds(requestStart);
      runtimeMetrics?.record(state.eventType, state.outcome, seconds);
      if (state.span) {
        state.span.setAttributes({ 'http.response.status_code': state.status });
        state.span.end();
      }
      const line = {
        ...state.logFields,
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

  const route = async (request: IncomingMessage, response: ServerResponse) => {
    const path = (request.url ?? '/').split('?')[0];
    const method = request.method ?? 'GET';
    if (path === '/') {
      if (method === 'POST') return handleEvent(request, response);
      if (method === 'OPTIONS') {
        // CloudEvents HTTP webhook abuse protection: allow the requesting origin.
        const origin = firstHeader(request.headers['webhook-request-origin']);
        return respond(response, 200, {
          allow: 'POST, OPTIONS',
          ...(origin ? { 'webhook-allowed-origin': origin, 'webhook-allowed-rate': '*' } : {}),
        });
      }
      return respondError(
        response,
        405,
        'MethodNotAllowed',
        `${method} is not allowed on /; POST a CloudEvent`,
        {
          allow: 'POST, OPTIONS',
        },
      );
    }
    const getOnly = (serve: () => void | Promise<void>) => {
      if (method === 'GET' || method === 'HEAD') return serve();
      if (method === 'OPTIONS') return respond(response, 200, { allow: 'GET, HEAD, OPTIONS' });
      return respondError(response, 405, 'MethodNotAllowed', `${method} is not allowed on ${path}`, {
        allow: 'GET, HEAD, OPTIONS',
      });
    };
    if (path === '/health/liveness') return getOnly(() => respondJson(response, 200, { status: 'alive' }));
    if (path === '/health/readiness') {
      return getOnly(() =>
        draining
          ? respondJson(response, 503, { status: 'draining' })
          : respondJson(response, 200, { status: 'ready' }),
      );
    }
    if (path === '/metrics' && metrics) {
      return getOnly(async () => {
        const exposition = await metrics.exposition();
        respond(response, 200, { 'content-type': exposition.contentType }, exposition.body);
      });
    }
    return respondError(response, 404, 'NotFound', `No route for ${path}`);
  };

  const server = createServer((request, response) => {
    inFlight += 1;
    response.once('close', () => {
      inFlight -= 1;
    });
    route(request, response).catch((error: unknown) => {
      // A bug in the server itself: answer 500 and keep serving.
      log.error('request failed', { ...describeError(error), stack: (error as Error)?.stack });
      respondError(response, 500, 'InternalError', describeError(error).message);
    });
  });
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
    sink: sinkUrl ?? null,
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
      await tracing
        ?.shutdown()
        .catch((error: unknown) => log.warn('trace flush failed', describeError(error)));
      log.info('function server stopped');
    })();
    return closing;
  };

  return { url, port: boundPort, close, ...(metrics ? { metrics } : {}) };
}
