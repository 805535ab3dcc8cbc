import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type TextMapGetter,
  type TextMapSetter,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ConsoleSpanExporter,
  SimpleSpanProcessor,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { Env } from '../config.js';
import type { Logger } from '../log.js';

/**
 * W3C trace context through each function, with OpenTelemetry.
 *
 * Every request continues the caller's trace (`traceparent`/`tracestate` headers, or the
 * CloudEvent distributed-tracing extension of a structured event) in a new SERVER span: same
 * trace id, new span id. The reply and every `send()` carry that span's traceparent. A handler
 * that resumes earlier work (kud-job-launch on its Job's completion) calls
 * `context.continueTrace(recorded)`: the request's span is re-opened under the recorded parent,
 * linked to the first one (docs/observability.md).
 *
 * Export follows the standard variables: `OTEL_TRACES_EXPORTER` = `otlp` (OTLP/HTTP to
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`/v1/traces, default
 * http://localhost:4318/v1/traces), `console`, or `none`/unset (the default: spans are not
 * exported, trace ids are still propagated and logged). `OTEL_SDK_DISABLED=true` also turns
 * export off. `OTEL_SERVICE_NAME` overrides the service name (default: the function name).
 * `OTEL_TRACES_SAMPLER` is read by the SDK itself from process.env.
 *
 * Each server owns its tracer provider (nothing global is registered), so several functions in
 * one process keep their own service names.
 */

/** The two W3C headers, as they travel. */
export interface TraceHeaders {
  traceparent?: string;
  tracestate?: string;
}

/** The span of one request, as the server uses it. */
export interface RequestSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** This span's context, for the reply and outgoing requests. */
  readonly headers: Required<Pick<TraceHeaders, 'traceparent'>> & TraceHeaders;
  /** Context with this span active: parent of child spans. */
  readonly context: Context;
  setAttributes(attributes: Attributes): void;
  /** Marks the span failed; `end` still has to be called. */
  fail(message: string): void;
  end(): void;
}

const headerGetter: TextMapGetter<TraceHeaders> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key as keyof TraceHeaders],
};
const headerSetter: TextMapSetter<TraceHeaders> = {
  set: (carrier, key, value) => {
    if (key === 'traceparent' || key === 'tracestate') carrier[key] = value;
  },
};

const propagator = new W3CTraceContextPropagator();

/** Parses W3C headers into an OpenTelemetry context (root when absent or malformed). */
export function extractTraceContext(headers: TraceHeaders): Context {
  return propagator.extract(ROOT_CONTEXT, headers, headerGetter);
}

/** The W3C headers of the span active in `context` (empty when there is none). */
export function injectTraceContext(context: Context): TraceHeaders {
  const carrier: TraceHeaders = {};
  propagator.inject(context, carrier, headerSetter);
  return carrier;
}

/** The trace id in a traceparent, or undefined when it is malformed. */
export function traceIdOf(traceparent: string | undefined): string | undefined {
  if (traceparent === undefined) return undefined;
  return trace.getSpanContext(extractTraceContext({ traceparent }))?.traceId;
}

export interface TracingOptions {
  serviceName: string;
  /** Variables read (OTEL_*). Default process.env. */
  env?: Env;
  /** Explicit span processors (tests, benchmarks); replace the env-configured exporter. */
  spanProcessors?: SpanProcessor[];
  /** Where to report exporter configuration problems. */
  log?: Logger;
}

export class Tracing {
  private constructor(
    private readonly provider: BasicTracerProvider,
    private readonly serviceName: string,
    /** True when spans leave the process. */
    readonly exporting: boolean,
  ) {}

  static async create(options: TracingOptions): Promise<Tracing> {
    const env = options.env ?? process.env;
    const serviceName = env.OTEL_SERVICE_NAME?.trim() || options.serviceName;
    const spanProcessors = options.spanProcessors ?? (await processorsFromEnv(env, options.log));
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': serviceName }),
      spanProcessors,
    });
    return new Tracing(provider, serviceName, spanProcessors.length > 0);
  }

  /**
   * Starts the SERVER span of a request, child of the caller's context when there is one.
   * `linkedTo`: spans this one is linked to (not parents), e.g. the span a request started in
   * before it continued another trace.
   */
  startServerSpan(
    name: string,
    parent: TraceHeaders,
    attributes: Attributes,
    startTime?: Date,
    linkedTo: readonly RequestSpan[] = [],
  ): RequestSpan {
    return this.start(name, extractTraceContext(parent), SpanKind.SERVER, attributes, startTime, linkedTo);
  }

  /** Starts a CLIENT span under `parent` (an outgoing send). */
  startClientSpan(name: string, parent: RequestSpan, attributes: Attributes): RequestSpan {
    return this.start(name, parent.context, SpanKind.CLIENT, attributes);
  }

  /** Flushes pending spans and stops the exporters. */
  async shutdown(): Promise<void> {
    await this.provider.shutdown();
  }

  private start(
    name: string,
    parentContext: Context,
    kind: SpanKind,
    attributes: Attributes,
    startTime?: Date,
    linkedTo: readonly RequestSpan[] = [],
  ): RequestSpan {
    const tracer = this.provider.getTracer(this.serviceName);
    const links = linkedTo.flatMap((other) => {
      const context = trace.getSpanContext(other.context);
      return context ? [{ context }] : [];
    });
    const span: Span = tracer.startSpan(name, { kind, attributes, startTime, links }, parentContext);
    const context = trace.setSpan(parentContext, span);
    const spanContext = span.spanContext();
    const headers = injectTraceContext(context);
    return {
      traceId: spanContext.traceId,
      spanId: spanContext.spanId,
      headers: { ...headers, traceparent: headers.traceparent ?? '' },
      context,
      setAttributes: (more) => span.setAttributes(more),
      fail: (message) => span.setStatus({ code: SpanStatusCode.ERROR, message }),
      end: () => span.end(),
    };
  }
}

async function processorsFromEnv(env: Env, log?: Logger): Promise<SpanProcessor[]> {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return [];
  const names = (env.OTEL_TRACES_EXPORTER ?? 'none')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '' && name !== 'none');
  const processors: SpanProcessor[] = [];
  for (const name of names) {
    if (name === 'otlp') {
      // Loaded only when asked for: keeps start-up time and memory down when tracing is off.
      const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
      const url = otlpTracesUrl(env);
      processors.push(new BatchSpanProcessor(new OTLPTraceExporter(url ? { url } : {})));
    } else if (name === 'console') {
      processors.push(new SimpleSpanProcessor(new ConsoleSpanExporter()));
    } else {
      log?.warn('unsupported OTEL_TRACES_EXPORTER entry ignored', { exporter: name });
    }
  }
  return processors;
}

/** The OTLP/HTTP path of traces, appended to a base endpoint. */
const otlpTracesPath = '/v1/traces';

/**
 * OTLP/HTTP traces endpoint from the given env (the exporter itself only reads process.env).
 * A base endpoint that already ends in `/v1/traces` is taken as it is: Knative's
 * config-observability `tracing-endpoint` has that form, and operators copy it here (appending
 * gave `/v1/traces/v1/traces`, which collectors answer 404).
 */
export function otlpTracesUrl(env: Env): string | undefined {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return traces;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim().replace(/\/+$/, '');
  if (!base) return undefined;
  return base.endsWith(otlpTracesPath) ? base : `${base}${otlpTracesPath}`;
}
