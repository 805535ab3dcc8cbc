import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { BpaError } from '../errors.js';

/**
 * Prometheus metrics of one function server, on its own Registry (never prom-client's global
 * one: the local stack and the tests run several servers in one process).
 *
 * Runtime metrics use faas-js-runtime's names so existing dashboards keep working:
 *   faas_invocations{function,event_type,outcome}        counter
 *   faas_errors{function,event_type,outcome}             counter (outcome invalid|error)
 *   faas_execution_latency{function,event_type,outcome}  histogram, seconds
 *   faas_cold_start_latency{function}                    histogram, seconds from server start
 *                                                        to the end of the first invocation
 *
 * Domain metrics (how handlers add their own):
 *   1. declare the metric once at module level with `counterSpec` / `histogramSpec` / `gaugeSpec`;
 *   2. list the specs in `FunctionDefinition.metrics` so the server registers them at startup
 *      (they appear on /metrics before the first event, which the dashboard test relies on);
 *   3. in the handler: `context.metrics?.counter(jobsLaunched).inc({ outcome: 'created' })`.
 * `counter()`/`histogram()`/`gauge()` are get-or-create by name, so calling them on every
 * request is cheap and returns the same instrument. Name domain metrics `bpa_<what>` with the
 * unit as suffix (`_seconds`, `_total` for counters).
 */

/** Outcome label of an invocation. */
export type InvocationOutcome =
  /** handled, no reply (204) */
  | 'ok'
  /** handled, replied with a CloudEvent (200) */
  | 'reply'
  /** rejected: malformed envelope, unaccepted type, data failing its schema, or an `invalid` BpaError (400) */
  | 'invalid'
  /** the handler failed (any other 4xx/5xx) */
  | 'error';

export interface CounterSpec<L extends string = string> {
  kind: 'counter';
  name: string;
  help: string;
  labelNames: readonly L[];
}
export interface HistogramSpec<L extends string = string> {
  kind: 'histogram';
  name: string;
  help: string;
  labelNames: readonly L[];
  /** Upper bounds; default prom-client's (5 ms … 10 s). */
  buckets?: number[];
}
export interface GaugeSpec<L extends string = string> {
  kind: 'gauge';
  name: string;
  help: string;
  labelNames: readonly L[];
}
export type MetricSpec = CounterSpec | HistogramSpec | GaugeSpec;

export const counterSpec = <const L extends string>(spec: Omit<CounterSpec<L>, 'kind'>): CounterSpec<L> => ({
  kind: 'counter',
  ...spec,
});
export const histogramSpec = <const L extends string>(
  spec: Omit<HistogramSpec<L>, 'kind'>,
): HistogramSpec<L> => ({ kind: 'histogram', ...spec });
export const gaugeSpec = <const L extends string>(spec: Omit<GaugeSpec<L>, 'kind'>): GaugeSpec<L> => ({
  kind: 'gauge',
  ...spec,
});

/** Latency buckets (seconds) wide enough for a 10-minute SSH install. */
export const secondsBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 600];

/** The registry of one server plus get-or-create access to domain instruments. */
export class FunctionMetrics {
  readonly registry = new Registry();

  counter<L extends string>(spec: CounterSpec<L>): Counter<L> {
    return this.getOrCreate(spec, Counter, () => new Counter<L>({ ...this.config(spec) }));
  }

  histogram<L extends string>(spec: HistogramSpec<L>): Histogram<L> {
    return this.getOrCreate(
      spec,
      Histogram,
      () => new Histogram<L>({ ...this.config(spec), ...(spec.buckets ? { buckets: spec.buckets } : {}) }),
    );
  }

  gauge<L extends string>(spec: GaugeSpec<L>): Gauge<L> {
    return this.getOrCreate(spec, Gauge, () => new Gauge<L>({ ...this.config(spec) }));
  }

  /** Registers a list of specs (FunctionDefinition.metrics) up front. */
  register(specs: readonly MetricSpec[]): void {
    for (const spec of specs) {
      if (spec.kind === 'counter') this.counter(spec);
      else if (spec.kind === 'histogram') this.histogram(spec);
      else this.gauge(spec);
    }
  }

  /** Prometheus text exposition of everything registered. */
  async exposition(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  private config<L extends string>(spec: { name: string; help: string; labelNames: readonly L[] }) {
    return {
      name: spec.name,
      help: spec.help,
      labelNames: [...spec.labelNames],
      registers: [this.registry],
    };
  }

  private getOrCreate<M>(spec: MetricSpec, kind: abstract new (...args: never[]) => M, create: () => M): M {
    const existing = this.registry.getSingleMetric(spec.name);
    if (existing === undefined) return create();
    if (existing instanceof kind) return existing;
    throw new BpaError(
      'MetricKindConflict',
      `Metric ${spec.name} is already registered with another kind than ${spec.kind}`,
      'internal',
    );
  }
}

const runtimeLabels = ['function', 'event_type', 'outcome'] as const;
type RuntimeLabel = (typeof runtimeLabels)[number];

export const invocationsSpec = counterSpec({
  name: 'faas_invocations',
  help: 'CloudEvent invocations of the function, by event type and outcome',
  labelNames: runtimeLabels,
});
export const errorsSpec = counterSpec({
  name: 'faas_errors',
  help: 'Invocations that ended in an error response (outcome invalid or error)',
  labelNames: runtimeLabels,
});
export const executionLatencySpec = histogramSpec({
  name: 'faas_execution_latency',
  help: 'Time from request received to response sent, in seconds',
  labelNames: runtimeLabels,
  buckets: secondsBuckets,
});
export const coldStartLatencySpec = histogramSpec({
  name: 'faas_cold_start_latency',
  help: 'Seconds from server start to the end of the first invocation',
  labelNames: ['function'],
  buckets: secondsBuckets,
});

/** The runtime instruments the server records on every CloudEvent request. */
export class RuntimeMetrics {
  private readonly invocations: Counter<RuntimeLabel>;
  private readonly errors: Counter<RuntimeLabel>;
  private readonly latency: Histogram<RuntimeLabel>;
  private readonly coldStart: Histogram<'function'>;
  private firstInvocationSeen = false;

  constructor(
    readonly metrics: FunctionMetrics,
    private readonly functionName: string,
    private readonly startedAt: bigint,
    options: { processMetrics?: boolean } = {},
  ) {
    this.invocations = metrics.counter(invocationsSpec);
    this.errors = metrics.counter(errorsSpec);
    this.latency = metrics.histogram(executionLatencySpec);
    this.coldStart = metrics.histogram(coldStartLatencySpec);
    // process_* and nodejs_* gauges: what kube-prometheus dashboards show for any Node service.
    if (options.processMetrics !== false) collectDefaultMetrics({ register: metrics.registry });
  }

  record(eventType: string, outcome: InvocationOutcome, seconds: number): void {
    const labels = { function: this.functionName, event_type: eventType, outcome };
    this.invocations.inc(labels);
    this.latency.observe(labels, seconds);
    if (outcome === 'invalid' || outcome === 'error') this.errors.inc(labels);
    if (!this.firstInvocationSeen) {
      this.firstInvocationSeen = true;
      const sinceStart = Number(process.hrtime.bigint() - this.startedAt) / 1e9;
      this.coldStart.observe({ function: this.functionName }, sinceStart);
    }
  }
}
