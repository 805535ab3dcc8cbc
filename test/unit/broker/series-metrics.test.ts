import { Counter, Histogram, Registry } from 'prom-client';
import {
  registerSeriesMetric,
  SeriesCounter,
  SeriesHistogram,
} from '../../../local/broker/series-metrics.js';

/** The same metric as prom-client's own and as a series metric, each in its own registry. */
function pair<P, S>(makeProm: (registry: Registry) => P, makeSeries: (registry: Registry) => S) {
  const promRegistry = new Registry();
  const seriesRegistry = new Registry();
  return { prom: makeProm(promRegistry), series: makeSeries(seriesRegistry), promRegistry, seriesRegistry };
}

const labelNames = ['kn_trigger_name', 'cloudevents_type', 'http_response_status_code'] as const;
const buckets = [0.001, 0.0025, 0.005, 0.01, 0.1, 1, 10];

describe('series metrics', () => {
  it('print a histogram exactly as prom-client does, bucket edges included', async () => {
    const { prom, series, promRegistry, seriesRegistry } = pair(
      (registry) =>
        new Histogram({ name: 'd_seconds', help: 'Dispatch.', labelNames, buckets, registers: [registry] }),
      (registry) =>
        registerSeriesMetric(registry, new SeriesHistogram('d_seconds', 'Dispatch.', labelNames, buckets)),
    );
    const observations: [string, string, string, number][] = [
      ['all', 'a.b', '202', 0.0004],
      ['all', 'a.b', '202', 0.001], // on an edge: le="0.001" counts it
      ['all', 'a.b', '500', 0.2],
      ['other', 'x "quoted"\\', '202', 12], // beyond the last bucket: +Inf only
      ['all', 'a.b', '202', 0.003],
    ];
    for (const [trigger, type, status, value] of observations) {
      prom.observe(
        { kn_trigger_name: trigger, cloudevents_type: type, http_response_status_code: status },
        value,
      );
      series.series(trigger, type, status).observe(value);
    }
    expect(await seriesRegistry.metrics()).toBe(await promRegistry.metrics());
  });

  it('print a counter exactly as prom-client does, and reset with the registry', async () => {
    const { prom, series, promRegistry, seriesRegistry } = pair(
      (registry) => new Counter({ name: 'o_total', help: 'Outcomes.', labelNames, registers: [registry] }),
      (registry) => registerSeriesMetric(registry, new SeriesCounter('o_total', 'Outcomes.', labelNames)),
    );
    for (const [trigger, status] of [
      ['all', '202'],
      ['all', '202'],
      ['b', '500'],
    ] as const) {
      prom.inc({ kn_trigger_name: trigger, cloudevents_type: 't', http_response_status_code: status });
      series.series(trigger, 't', status).inc();
    }
    expect(await seriesRegistry.metrics()).toBe(await promRegistry.metrics());
    seriesRegistry.resetMetrics();
    expect(await seriesRegistry.metrics()).not.toContain('o_total{');
  });

  it('folds label values past the series limit into one _overflow series', async () => {
    const registry = new Registry();
    const counter = registerSeriesMetric(registry, new SeriesCounter('t_total', 'T.', ['type'], 3));
    for (const type of ['a', 'b', 'c', 'd', 'e', 'a']) counter.series(type).inc();
    const text = await registry.metrics();
    expect(text).toContain('t_total{type="a"} 2');
    expect(text).toContain('t_total{type="c"} 1');
    expect(text).toContain('t_total{type="_overflow"} 2');
    expect(text).not.toContain('type="d"');
    expect(counter.all()).toHaveLength(4);
  });

  it('refuses a series with the wrong number of label values', () => {
    const counter = new SeriesCounter('c_total', 'C.', labelNames);
    expect(() => counter.series('only-one')).toThrow('c_total: expected 3 label values, got 1');
  });
});
