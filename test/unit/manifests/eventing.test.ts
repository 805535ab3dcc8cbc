import { EventTypes, SourceEventTypes } from '../../../shared/events/types.js';
import { kustomizeWithComponents, parseObjects, ofKind } from './kustomize.js';
import { isoSeconds, renderedManifests } from './manifest-set.js';
import { permissionsOf, permissionKey, rbacTable, grantsAsRules } from './rbac-table.js';
import { brokerSchema, triggerSchema } from './schemas.js';

const manifests = renderedManifests();
const deadLetter = { ref: { apiVersion: 'serving.knative.dev/v1', kind: 'Service', name: 'dead-letter' } };
const brokerRef = { ref: { apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', name: 'default' } };

/** The chain's wiring (docs/architecture.md): which events each function subscribes to. */
const expectedSubscriptions: Record<string, Record<string, string>[]> = {
  'host-lookup': [
    { type: SourceEventTypes.resourceAdd, kind: 'Provisioning' },
    { type: SourceEventTypes.resourceUpdate, kind: 'Provisioning' },
    { type: SourceEventTypes.ping },
  ],
  'inventory-render': [{ type: EventTypes.hostsResolved }],
  'kud-job-launch': [
    { type: EventTypes.inventoryRendered },
    { type: SourceEventTypes.resourceUpdate, kind: 'Job' },
    { type: SourceEventTypes.ping },
  ],
  'software-install': [
    { type: SourceEventTypes.resourceAdd, kind: 'Software' },
    { type: SourceEventTypes.resourceUpdate, kind: 'Software' },
    { type: EventTypes.clusterReady },
    { type: SourceEventTypes.ping },
  ],
};

const sortKeys = (map: Record<string, string>) => JSON.stringify(Object.entries(map).sort());

describe('Broker', () => {
  it('is the default MTChannelBasedBroker with bounded retries into the dead-letter sink', () => {
    expect(manifests.brokers).toHaveLength(1);
    const [broker] = manifests.brokers;
    expect(broker?.metadata.name).toBe('default');
    expect(broker?.metadata.annotations['eventing.knative.dev/broker.class']).toBe('MTChannelBasedBroker');
    expect(broker?.spec.delivery.backoffPolicy).toBe('exponential');
    expect(broker?.spec.delivery.deadLetterSink).toEqual(deadLetter);
  });

  it('asks the MT broker for an asynchronous in-memory channel (the producer never waits for the chain)', () => {
    // Knative's broker reconciler copies this annotation to the Broker's InMemoryChannel, whose
    // dispatcher then answers 202 before fanning out (pkg/reconciler/broker, pkg/channel/fanout).
    const [broker] = manifests.brokers;
    expect(broker?.metadata.annotations['messaging.knative.dev/async-handler']).toBe('true');
  });

  it.each([
    ['broker-kafka', 'Kafka', { apiVersion: 'v1', kind: 'ConfigMap', name: 'kafka-broker-config', namespace: 'knative-eventing' }],
    ['broker-rabbitmq', 'RabbitMQBroker', { apiVersion: 'eventing.knative.dev/v1alpha1', kind: 'RabbitmqBrokerConfig', name: 'bpa-rabbitmq' }],
  ])('component %s switches the class to %s and configures it', (component, brokerClass, config) => {
    const objects = parseObjects(kustomizeWithComponents([component]));
    const [broker] = ofKind(objects, 'Broker').map((o) => brokerSchema.parse(o));
    expect(broker?.metadata.annotations['eventing.knative.dev/broker.class']).toBe(brokerClass);
    expect(broker?.spec.config).toEqual(config);
    // Delivery defaults survive the switch.
    expect(broker?.spec.delivery).toEqual(manifests.brokers[0]?.spec.delivery);
    if (component === 'broker-rabbitmq') {
      const configs = ofKind(objects, 'RabbitmqBrokerConfig');
      expect(configs.map((c) => [c.metadata.name, c.metadata.namespace])).toEqual([['bpa-rabbitmq', 'bpa-system']]);
      const triggers = ofKind(objects, 'Trigger').map((o) => triggerSchema.parse(o));
      for (const t of triggers) expect(t.metadata.annotations?.['rabbitmq.eventing.knative.dev/parallelism']).toBe('10');
    }
  });
});

describe('Triggers', () => {
  it('subscribe each function to exactly the events of the chain', () => {
    const actual: Record<string, string[]> = {};
    for (const trigger of manifests.triggers) {
      const subscriber = trigger.spec.subscriber.ref?.name ?? '';
      const exact = trigger.spec.filter.attributes;
      (actual[subscriber] ??= []).push(sortKeys(exact));
    }
    for (const list of Object.values(actual)) list.sort();
    const expected = Object.fromEntries(
      Object.entries(expectedSubscriptions).map(([fn, subs]) => [fn, subs.map(sortKeys).sort()]),
    );
    expect(actual).toEqual(expected);
  });

  it.each(manifests.triggers.map((t) => [t.metadata.name, t] as const))(
    '%s: attribute filters, bounded exponential delivery, dead-letter sink, a real subscriber',
    (_, trigger) => {
      expect(trigger.spec.broker).toBe('default');
      // `filter.attributes`, the dialect every broker class honours: RabbitMQ's ignores
      // `filters`, so a Trigger written with it would get every event on the broker.
      expect(trigger.spec).not.toHaveProperty('filters');
      const exact = trigger.spec.filter.attributes;
      expect(typeof exact.type).toBe('string');
      // ApiServerSource events are told apart by the `kind` extension.
      if (String(exact.type).startsWith('dev.knative.apiserver.')) expect(exact.kind).toBeTruthy();
      const delivery = trigger.spec.delivery;
      expect(delivery.retry).toBeGreaterThanOrEqual(1);
      expect(delivery.retry).toBeLessThanOrEqual(10);
      expect(delivery.backoffPolicy).toBe('exponential');
      expect(delivery.deadLetterSink).toEqual(deadLetter);
      const subscriber = manifests.serviceNamed(trigger.spec.subscriber.ref?.name ?? '');
      expect(trigger.spec.subscriber.ref?.kind).toBe('Service');
      // The broker gives up on an attempt no earlier than Knative would end the request.
      expect(isoSeconds(delivery.timeout)).toBe(subscriber.spec.template.spec.timeoutSeconds);
      expect(trigger.metadata.name.startsWith(`${subscriber.metadata.name}-`)).toBe(true);
    },
  );
});

describe('sources', () => {
  /** plural of a kind as RBAC names it, for the kinds the sources watch. */
  const plural: Record<string, string> = { Provisioning: 'provisionings', Software: 'softwares', Job: 'jobs' };

  it('watch Provisioning + Software and the project’s Jobs in every namespace, in Resource mode', () => {
    const byName = Object.fromEntries(manifests.apiServerSources.map((s) => [s.metadata.name, s.spec]));
    expect(Object.keys(byName).sort()).toEqual(['bpa-jobs', 'bpa-resources']);
    expect(byName['bpa-resources']?.resources).toEqual([
      { apiVersion: 'bpa.akraino.org/v1alpha1', kind: 'Provisioning' },
      { apiVersion: 'bpa.akraino.org/v1alpha1', kind: 'Software' },
    ]);
    expect(byName['bpa-jobs']?.resources).toEqual([
      { apiVersion: 'batch/v1', kind: 'Job', selector: { matchLabels: { 'app.kubernetes.io/managed-by': 'bpa-functions' } } },
    ]);
    for (const spec of Object.values(byName)) {
      expect(spec.mode).toBe('Resource');
      expect(spec.namespaceSelector).toEqual({});
      expect(spec.sink).toEqual(brokerRef);
    }
  });

  it.each(['bpa-resources', 'bpa-jobs'])('%s: its ServiceAccount may get, list and watch what it lists', (name) => {
    const source = manifests.apiServerSources.find((s) => s.metadata.name === name);
    const account = Object.values(rbacTable).find((a) => a.serviceAccount === source?.spec.serviceAccountName);
    expect(account).toBeDefined();
    const granted = new Set(permissionsOf(grantsAsRules(account?.grants ?? [])).map(permissionKey));
    const needed = (source?.spec.resources ?? []).flatMap((r) => {
      const group = r.apiVersion.includes('/') ? r.apiVersion.split('/')[0] ?? '' : '';
      return ['get', 'list', 'watch'].map((verb) => permissionKey({ group, resource: plural[r.kind] ?? '?', verb }));
    });
    expect([...granted].sort()).toEqual([...new Set(needed)].sort());
  });

  it('pings the broker every minute for the sweep', () => {
    expect(manifests.pingSources.map((p) => [p.metadata.name, p.spec.schedule, p.spec.sink])).toEqual([
      ['bpa-sweep', '* * * * *', brokerRef],
    ]);
  });
});
