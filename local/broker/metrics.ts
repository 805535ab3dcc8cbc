import { Registry } from 'prom-client';
import { registerSeriesMetric, SeriesCounter, SeriesHistogram } from './series-metrics.js';

/**
 * Knative-style broker metrics. Knative 1.22 records `kn.eventing.dispatch.duration` (OpenTelemetry,
 * seconds) with `kn.broker.*`, `kn.trigger.name`, `cloudevents.type` and `http.response.status_code`;
 * an OpenTelemetry Prometheus exporter names that `kn_eventing_dispatch_duration_seconds` with dots
 * turned into underscores, which is what is exposed here. Never the event id (unbounded).
 * Series metrics (series-metrics.ts): looked up by label values in `labelNames` order.
 */
export interface BrokerMetrics {
  registry: Registry;
  dispatchDuration: SeriesHistogram;
  ingressEvents: SeriesCounter;
  deliveryOutcomes: SeriesCounter;
}

const getOrCreate = <T>(registry: Registry, name: string, create: () => T): T =>
  (registry.getSingleMetric(name) as T | undefined) ?? create();

export function createBrokerMetrics(registry: Registry = new Registry()): BrokerMetrics {
  const dispatchDuration = getOrCreate(registry, 'kn_eventing_dispatch_duration_seconds', () =>
    registerSeriesMetric(
      registry,
      new SeriesHistogram(
        'kn_eventing_dispatch_duration_seconds',
        'Time to dispatch an event to a trigger subscriber (one attempt).',
        [
          'kn_broker_namespace',
          'kn_broker_name',
          'kn_trigger_name',
          'cloudevents_type',
          'http_response_status_code',
        ],
        [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      ),
    ),
  );
  const ingressEvents = getOrCreate(registry, 'kn_eventing_broker_ingress_events_total', () =>
    registerSeriesMetric(
      registry,
      new SeriesCounter(
        'kn_eventing_broker_ingress_events_total',
        'Events received by the broker ingress, by answer code.',
        ['kn_broker_namespace', 'kn_broker_name', 'cloudevents_type', 'http_response_status_code'],
      ),
    ),
  );
  const deliveryOutcomes = getOrCreate(registry, 'kn_eventing_delivery_outcomes_total', () =>
    registerSeriesMetric(
      registry,
      new SeriesCounter(
        'kn_eventing_delivery_outcomes_total',
        'Delivery attempts by outcome (delivered, retry, dead-lettered, dropped).',
        ['kn_broker_namespace', 'kn_broker_name', 'kn_trigger_name', 'cloudevents_type', 'outcome'],
      ),
    ),
  );
  return { registry, dispatchDuration, ingressEvents, deliveryOutcomes };
}
