import type { Registry } from 'prom-client';

/**
 * Counters and histograms for the broker's per-event path. prom-client hashes and validates
 * the label object on every `inc`/`observe`, which costs microseconds an event; here a series
 * is found by its label values (one string key) and updated with plain arithmetic. They are
 * registered on a prom-client Registry as custom metrics (`get()` in prom-client's format), so
 * `/metrics` prints them exactly as prom-client's own Counter and Histogram would.
 */

type Labels = Record<string, string>;

interface MetricValue {
  labels: Labels;
  value: number;
  metricName?: string;
}

/** Series kept per metric; label values beyond that (event types a producer invents) share one. */
export const defaultMaxSeries = 10_000;
/** The value of every label of the one series shared past the limit. */
export const overflowLabel = '_overflow';

abstract class SeriesMetric<S extends { labels: Labels }> {
  readonly aggregator = 'sum';
  private readonly byKey = new Map<string, S>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    private readonly maxSeries = defaultMaxSeries,
  ) {}

  /**
   * The series with these label values, in `labelNames` order; created on first use. Past
   * `maxSeries` distinct series, new label values all land in one series labelled `_overflow`.
   */
  series(...values: string[]): S {
    const key = values.join('\u0000');
    let series = this.byKey.get(key);
    if (!series) {
      if (values.length !== this.labelNames.length)
        throw new Error(
          `${this.name}: expected ${this.labelNames.length} label values, got ${values.length}`,
        );
      const overflowKey = this.labelNames.map(() => overflowLabel).join('\u0000');
      if (this.byKey.size >= this.maxSeries && key !== overflowKey)
        return this.series(...this.labelNames.map(() => overflowLabel));
      const labels: Labels = {};
      this.labelNames.forEach((name, index) => (labels[name] = values[index]!));
      series = this.create(labels);
      this.byKey.set(key, series);
    }
    return series;
  }

  /** Every series, for tests and `get()`. */
  all(): S[] {
    return [...this.byKey.values()];
  }

  /** Registry.resetMetrics() calls this. */
  reset(): void {
    this.byKey.clear();
  }

  protected abstract create(labels: Labels): S;
}

export class CounterSeries {
  value = 0;
  constructor(readonly labels: Labels) {}
  inc(by = 1): void {
    this.value += by;
  }
}

export class SeriesCounter extends SeriesMetric<CounterSeries> {
  readonly type = 'counter';

  protected create(labels: Labels): CounterSeries {
    return new CounterSeries(labels);
  }

  get() {
    const values: MetricValue[] = this.all().map(({ labels, value }) => ({ labels: { ...labels }, value }));
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
}

export class HistogramSeries {
  /** Observations per bucket (not cumulative); the last slot is +Inf. */
  readonly counts: number[];
  sum = 0;
  count = 0;
  constructor(
    readonly labels: Labels,
    private readonly upperBounds: readonly number[],
  ) {
    this.counts = new Array<number>(upperBounds.length + 1).fill(0);
  }

  observe(value: number): void {
    const bounds = this.upperBounds;
    let slot = 0;
    while (slot < bounds.length && value > bounds[slot]!) slot++;
    this.counts[slot]! += 1;
    this.sum += value;
    this.count += 1;
  }
}

export class SeriesHistogram extends SeriesMetric<HistogramSeries> {
  readonly type = 'histogram';

  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    readonly upperBounds: readonly number[],
    maxSeries = defaultMaxSeries,
  ) {
    super(name, help, labelNames, maxSeries);
  }

  protected create(labels: Labels): HistogramSeries {
    return new HistogramSeries(labels, this.upperBounds);
  }

  get() {
    const values: MetricValue[] = [];
    for (const series of this.all()) {
      // `le` first, as prom-client prints it.
      let cumulative = 0;
      this.upperBounds.forEach((bound, slot) => {
        cumulative += series.counts[slot]!;
        values.push({
          labels: { le: String(bound), ...series.labels },
          value: cumulative,
          metricName: `${this.name}_bucket`,
        });
      });
      values.push({
        labels: { le: '+Inf', ...series.labels },
        value: series.count,
        metricName: `${this.name}_bucket`,
      });
      values.push({ labels: { ...series.labels }, value: series.sum, metricName: `${this.name}_sum` });
      values.push({ labels: { ...series.labels }, value: series.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
}

/** Registers a series metric on a prom-client registry (which takes any object with `get()`). */
export function registerSeriesMetric<M extends SeriesCounter | SeriesHistogram>(
  registry: Registry,
  metric: M,
): M {
  registry.registerMetric(metric as unknown as Parameters<Registry['registerMetric']>[0]);
  return metric;
}
