import type { z } from 'zod';
import { invalid } from '../../shared/errors.js';
import type { Logger } from '../../shared/log.js';
import { parseIsoDuration } from './duration.js';
import { compileTriggerFilter, type EventFilter } from './filters.js';
import {
  brokerObjectSchema,
  defaultBrokerDelivery,
  triggerObjectSchema,
  type DeliverySpec,
  type Destination,
  type KReference,
} from './knative-objects.js';
import { objectsOfKind } from '../knative-objects.js';

/** Turns a `ref` (with its namespace filled in) into a URL; the caller knows where things run. */
export type RefResolver = (ref: KReference & { namespace: string }) => string | Promise<string>;

/** A DeliverySpec with durations parsed and the dead-letter sink resolved. */
export interface ResolvedDelivery {
  /** Extra attempts after the first. */
  retry: number;
  backoffPolicy?: 'linear' | 'exponential';
  backoffDelayMs?: number;
  /** Per-attempt timeout; undefined = none. */
  timeoutMs?: number;
  deadLetterSinkUrl?: string;
  /** `json` delivers in structured mode; binary is the default. */
  format: 'binary' | 'json';
}

export interface ResolvedTrigger {
  namespace: string;
  name: string;
  broker: string;
  /** Where this process delivers (a local stack's function on loopback). */
  subscriberUrl: string;
  /**
   * What Knative records as the Trigger's `status.subscriberUri` and names in a dead letter's
   * `knativeerrordest`: the subscriber's in-cluster address (clusterAddressOf).
   */
  subscriberUri: string;
  filter: EventFilter;
  delivery: ResolvedDelivery;
}

export interface ResolvedBroker {
  namespace: string;
  name: string;
  delivery: ResolvedDelivery;
  triggers: ResolvedTrigger[];
}

export interface LoadOptions {
  resolveRef: RefResolver;
  /** Namespace for objects whose metadata has none (kustomize normally sets it). Default `default`. */
  defaultNamespace?: string;
  log?: Logger;
}

const describeIssues = (error: z.ZodError) =>
  error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ');

const objectLabel = (object: unknown) => {
  const record = object as { kind?: unknown; metadata?: { name?: unknown; namespace?: unknown } };
  return `${String(record.kind)} ${String(record.metadata?.namespace ?? '')}/${String(record.metadata?.name ?? '?')}`;
};

/** Resolves a Destination: `uri` as is, `ref` via the resolver, both = uri relative to the ref URL. */
export async function resolveDestination(
  destination: Destination,
  namespace: string,
  resolveRef: RefResolver,
): Promise<string> {
  if (!destination.ref) return new URL(destination.uri!).toString();
  const base = await resolveRef({ ...destination.ref, namespace: destination.ref.namespace ?? namespace });
  return destination.uri ? new URL(destination.uri, base).toString() : new URL(base).toString();
}

/** The MT channel broker's ingress, the address Knative gives every Broker of that class. */
const brokerIngressHost = 'broker-ingress.knative-eventing.svc.cluster.local';

/**
 * The address Knative resolves a Destination to (knative.dev/pkg resolver, URIFromDestinationV1):
 * a core Service ref is `http://<name>.<namespace>.svc.cluster.local`, and so is a cluster-local
 * Knative Service's `status.address.url`; a Broker ref is its ingress path; a `uri` beside a ref
 * is resolved against it, a `uri` alone is itself. A ref of any other kind has no address this
 * code can know: the URL `dialed` stands for it. A local stack dials its functions on loopback,
 * but reports what a cluster would, so that a dead letter names its subscriber the same way.
 */
export function clusterAddressOf(destination: Destination, namespace: string, dialed: string): string {
  const { ref } = destination;
  if (!ref) return dialed;
  const group = ref.apiVersion.includes('/') ? ref.apiVersion.split('/')[0] : '';
  const refNamespace = ref.namespace ?? namespace;
  let base: string | undefined;
  if (ref.kind === 'Service' && (group === '' || group === 'serving.knative.dev'))
    base = `http://${ref.name}.${refNamespace}.svc.cluster.local`;
  else if (ref.kind === 'Broker' && group === 'eventing.knative.dev')
    base = `http://${brokerIngressHost}/${refNamespace}/${ref.name}`;
  if (!base) return dialed;
  return destination.uri ? new URL(destination.uri, base).toString() : base;
}

async function resolveDelivery(
  spec: DeliverySpec,
  namespace: string,
  resolveRef: RefResolver,
  where: string,
): Promise<ResolvedDelivery> {
  const duration = (text: string | undefined, field: string) => {
    if (text === undefined) return undefined;
    try {
      return parseIsoDuration(text);
    } catch (error) {
      throw invalid('InvalidKnativeObject', `${where}: delivery.${field}: ${(error as Error).message}`);
    }
  };
  const resolved: ResolvedDelivery = {
    retry: spec.retry ?? 0,
    format: spec.format === 'json' ? 'json' : 'binary',
  };
  if (spec.backoffPolicy) resolved.backoffPolicy = spec.backoffPolicy;
  const delay = duration(spec.backoffDelay, 'backoffDelay');
  if (delay !== undefined) resolved.backoffDelayMs = delay;
  const timeout = duration(spec.timeout, 'timeout');
  if (timeout !== undefined) resolved.timeoutMs = timeout;
  if (spec.deadLetterSink) {
    resolved.deadLetterSinkUrl = await resolveDestination(spec.deadLetterSink, namespace, resolveRef);
  }
  return resolved;
}

/**
 * Builds the broker configuration from a list of Kubernetes objects (as parsed from YAML):
 * keeps `eventing.knative.dev/v1` Brokers and Triggers, validates them, resolves destinations.
 * A Trigger's `delivery` replaces its Broker's wholesale; a Broker without one gets Knative's
 * default (10 retries, exponential, PT0.2S). Triggers naming a missing Broker are skipped
 * with a warning (on a cluster they would stay not Ready).
 */
export async function loadBrokerConfig(
  objects: readonly unknown[],
  options: LoadOptions,
): Promise<ResolvedBroker[]> {
  const defaultNamespace = options.defaultNamespace ?? 'default';
  const parse = <T>(schema: z.ZodType<T>, object: unknown): T => {
    const result = schema.safeParse(object);
    if (!result.success) {
      throw invalid('InvalidKnativeObject', `${objectLabel(object)}: ${describeIssues(result.error)}`);
    }
    return result.data;
  };

  const brokers = new Map<string, ResolvedBroker>();
  for (const object of objectsOfKind(objects, 'eventing.knative.dev', 'Broker')) {
    const broker = parse(brokerObjectSchema, object);
    const namespace = broker.metadata.namespace ?? defaultNamespace;
    const key = `${namespace}/${broker.metadata.name}`;
    if (brokers.has(key)) throw invalid('InvalidKnativeObject', `Broker ${key} is defined twice`);
    brokers.set(key, {
      namespace,
      name: broker.metadata.name,
      delivery: await resolveDelivery(
        broker.spec?.delivery ?? defaultBrokerDelivery,
        namespace,
        options.resolveRef,
        `Broker ${key}`,
      ),
      triggers: [],
    });
  }

  for (const object of objectsOfKind(objects, 'eventing.knative.dev', 'Trigger')) {
    const trigger = parse(triggerObjectSchema, object);
    const namespace = trigger.metadata.namespace ?? defaultNamespace;
    const where = `Trigger ${namespace}/${trigger.metadata.name}`;
    const broker = brokers.get(`${namespace}/${trigger.spec.broker}`);
    if (!broker) {
      options.log?.warn('trigger names a broker that does not exist; skipped', {
        trigger: `${namespace}/${trigger.metadata.name}`,
        broker: trigger.spec.broker,
      });
      continue;
    }
    let filter: EventFilter;
    try {
      filter = compileTriggerFilter(trigger.spec);
    } catch (error) {
      throw invalid('InvalidKnativeObject', `${where}: ${(error as Error).message}`);
    }
    const subscriberUrl = await resolveDestination(trigger.spec.subscriber, namespace, options.resolveRef);
    broker.triggers.push({
      namespace,
      name: trigger.metadata.name,
      broker: broker.name,
      subscriberUrl,
      subscriberUri: clusterAddressOf(trigger.spec.subscriber, namespace, subscriberUrl),
      filter,
      delivery: trigger.spec.delivery
        ? await resolveDelivery(trigger.spec.delivery, namespace, options.resolveRef, where)
        : broker.delivery,
    });
  }
  return [...brokers.values()];
}
