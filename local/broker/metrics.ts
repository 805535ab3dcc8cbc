import { Counter, Histogram, Registry } from 'prom-client';

/**
 * Knative-style broker metrics. Knative 1.22's broker filter (knative.dev/eventing v0.49.2
 * pkg/broker/filter) records `kn.eventing.dispatch.duration` (OpenTelemetry, seconds) with
 * `kn.broker.name`, `kn.broker.namespace`, `messaging.destination.name` (`trigger:<name>.<ns>`,
 * no trigger name attribute of its own), `messaging.operation.name`, `messaging.system`,
 * `cloudevents.type` and `http.response.status_code`; its Prometheus exporter names that
 * `kn_eventing_dispatch_duration_seconds` with dots turned into underscores, which is what is
 * exposed here (test/integration/chain/retried-delivery.test.ts scrapes the real one). Never the
 * event id (unbounded).
 * prom-client's Counter and Histogram, behind `series(...labelValues)` (values in `labelNames`
 * order) so that the number of series stays bounded (BoundedSeries).
 */
export interface BrokerMetrics {
  registry: Registry;
  dispatchDuration: BoundedSeries<Histogram.Internal<string>>;
  ingressEvents: BoundedSeries<Counter.Internal>;
  deliveryOutcomes: BoundedSeries<Counter.Internal>;
}

/** Series kept per metric; label values beyond that (event types a producer invents) share one. */
export const defaultMaxSeries = 10_000;
/** The value of every label of the one series shared past the limit. */
export const overflowLabel = '_overflow';

/**
 * A prom-client metric whose distinct label-value combinations are capped: past `maxSeries`, new
 * combinations all land in one series whose labels are all `_overflow` (an event type is the
 * producer's to choose, and a series lives as long as the broker).
 */
export class BoundedSeries<Child> {
  private readonly seen = new Set<string>();
  private readonly overflow: string[];

  constructor(
    private readonly metric: Counter<string> | Histogram<string>,
    private readonly labelNames: readonly string[],
    private readonly maxSeries = defaultMaxSeries,
  ) {
    this.overflow = labelNames.map(() => overflowLabel);
  }

  /** The series with these label values, in `labelNames` order. */
  series(...values: string[]): Child {
    if (values.length !== this.labelNames.length)
      throw new Error(`expected ${this.labelNames.length} label values, got ${values.length}`);
    const key = values.join('\u0000');
    if (!this.seen.has(key)) {
      if (this.seen.size >= this.maxSeries) return this.metric.labels(...this.overflow) as Child;
      this.seen.add(key);
    }
    return this.metric.labels(...values) as Child;
  }
}

/** `messaging.destination.name` of a Trigger, as Knative's filter writes it (pkg/tracing). */
export const triggerDestination = (namespace: string, name: string) => `trigger:${name}.${namespace}`;

const dispatchLabels = [
  'kn_broker_namespace',
  'kn_broker_name',
  'messaging_destination_name',
  'cloudevents_type',
  'http_response_status_code',
];
const ingressLabels = [
  'kn_broker_namespace',
  'kn_broker_name',
  'cloudevents_type',
  'http_response_status_code',
];
const outcomeLabels = [
  'kn_broker_namespace',
  'kn_broker_name',
  'messaging_destination_name',
  'cloudevents_type',
  'outcome',
];

/** The broker's metrics on `registry`; a registry that has them already is reused as it is. */
export function createBrokerMetrics(
  registry: Registry = new Registry(),
  maxSeries = defaultMaxSeries,
): BrokerMetrics {
  const existing = <M>(name: string) => registry.getSingleMetric(name) as M | undefined;
  const dispatchDuration =
    existing<Histogram<string>>('kn_eventing_dispatch_duration_seconds') ??
    new Histogram({
      name: 'kn_eventing_dispatch_duration_seconds',
      help: 'Time to dispatch an event to a trigger subscriber (one attempt).',
      labelNames: dispatchLabels,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    });
  const ingressEvents =
    existing<Counter<string>>('kn_eventing_broker_ingress_events_total') ??
    new Counter({
      name: 'kn_eventing_broker_ingress_events_total',
      help: 'Events received by the broker ingress, by answer code.',
      labelNames: ingressLabels,
      registers: [registry],
    });
  const deliveryOutcomes =
    existing<Counter<string>>('kn_eventing_delivery_outcomes_total') ??
    new Counter({
      name: 'kn_eventing_delivery_outcomes_total',
      help: 'Delivery attempts by outcome (delivered, retry, dead-lettered, dropped).',
      labelNames: outcomeLabels,
      registers: [registry],
    });
  return {
    registry,
    dispatchDuration: new BoundedSeries(dispatchDuration, dispatchLabels, maxSeries),
    ingressEvents: new BoundedSeries(ingressEvents, ingressLabels, maxSeries),
    deliveryOutcomes: new BoundedSeries(deliveryOutcomes, outcomeLabels, maxSeries),
  };
}
