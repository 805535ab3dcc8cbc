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
  subscriberUrl: string;
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
    broker.triggers.push({
      namespace,
      name: trigger.metadata.name,
      broker: broker.name,
      subscriberUrl: await resolveDestination(trigger.spec.subscriber, namespace, options.resolveRef),
      filter,
      delivery: trigger.spec.delivery
        ? await resolveDelivery(trigger.spec.delivery, namespace, options.resolveRef, where)
        : broker.delivery,
    });
  }
  return [...brokers.values()];
}
