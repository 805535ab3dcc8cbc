import { Registry } from 'prom-client';
import { createBrokerMetrics } from '../../../local/broker/metrics.js';

/** The broker's prom-client metrics: the names and labels dashboards read, and the series cap. */
describe('broker metrics', () => {
  it('expose the Knative names with their labels, in labelNames order', async () => {
    const metrics = createBrokerMetrics();
    metrics.ingressEvents.series('ns', 'default', 'a.b', '202').inc();
    metrics.deliveryOutcomes.series('ns', 'default', 'trigger:all.ns', 'a.b', 'delivered').inc();
    metrics.dispatchDuration.series('ns', 'default', 'trigger:all.ns', 'a.b', '202').observe(0.003);
    const text = await metrics.registry.metrics();

    expect(text).toContain(
      'kn_eventing_broker_ingress_events_total{kn_broker_namespace="ns",kn_broker_name="default",cloudevents_type="a.b",http_response_status_code="202"} 1',
    );
    expect(text).toContain(
      'kn_eventing_delivery_outcomes_total{kn_broker_namespace="ns",kn_broker_name="default",messaging_destination_name="trigger:all.ns",cloudevents_type="a.b",outcome="delivered"} 1',
    );
    expect(text).toContain(
      'kn_eventing_dispatch_duration_seconds_bucket{le="0.0025",kn_broker_namespace="ns",kn_broker_name="default",messaging_destination_name="trigger:all.ns",cloudevents_type="a.b",http_response_status_code="202"} 0',
    );
    expect(text).toContain(
      'kn_eventing_dispatch_duration_seconds_bucket{le="0.005",kn_broker_namespace="ns",kn_broker_name="default",messaging_destination_name="trigger:all.ns",cloudevents_type="a.b",http_response_status_code="202"} 1',
    );
    expect(text).toContain('kn_eventing_dispatch_duration_seconds_count{');
  });

  it('reuse the metrics a registry has already (two brokers, one /metrics)', async () => {
    const registry = new Registry();
    createBrokerMetrics(registry).ingressEvents.series('a', 'default', 't', '202').inc();
    createBrokerMetrics(registry).ingressEvents.series('a', 'default', 't', '202').inc();

    expect(await registry.metrics()).toContain(
      'kn_eventing_broker_ingress_events_total{kn_broker_namespace="a",kn_broker_name="default",cloudevents_type="t",http_response_status_code="202"} 2',
    );
  });

  it('fold label values past the series limit into one _overflow series', async () => {
    const metrics = createBrokerMetrics(new Registry(), 3);
    for (const type of ['a', 'b', 'c', 'd', 'e', 'a'])
      metrics.ingressEvents.series('ns', 'default', type, '202').inc();
    const text = await metrics.registry.metrics();

    expect(text).toContain('cloudevents_type="a",http_response_status_code="202"} 2');
    expect(text).toContain('cloudevents_type="c",http_response_status_code="202"} 1');
    expect(text).toContain(
      'kn_eventing_broker_ingress_events_total{kn_broker_namespace="_overflow",kn_broker_name="_overflow",cloudevents_type="_overflow",http_response_status_code="_overflow"} 2',
    );
    expect(text).not.toContain('cloudevents_type="d"');
  });

  it('refuse a series with the wrong number of label values', () => {
    const metrics = createBrokerMetrics();
    expect(() => metrics.ingressEvents.series('only-one')).toThrow('expected 4 label values, got 1');
  });
});
