/**
 * Which function each event goes to, computed from the Triggers of manifests/ (issue 14: routing
 * comes from the Triggers, never from a hand-kept table) and decided by the embedded broker's own
 * filter code (local/broker/filters.ts, Knative's `pkg/eventfilter` semantics). The chain suites'
 * harnesses play the broker with it.
 */
import type { CloudEvent } from 'cloudevents';
import { rawEventOf } from '../../../../shared/cloudevents/message.js';
import { invalid } from '../../../../shared/errors.js';
import { compileTriggerFilter, type EventFilter } from '../../../../local/broker/filters.js';
import { triggerObjectSchema } from '../../../../local/broker/knative-objects.js';
import { objectsOfKind } from '../../../../local/knative-objects.js';
import { loadKustomization } from '../../../../local/stack/manifest-objects.js';
import { manifestsDir } from '../../../unit/manifests/kustomize.js';

/** One Trigger: its name, the function its subscriber names, its compiled filter. */
export interface TriggerRoute {
  trigger: string;
  subscriber: string;
  filter: EventFilter;
}

/**
 * A subscriber's function: the name of the Service its `ref` names (a Knative Service, or the
 * plain Service the local Serving overlay makes of it). A URI has no function to run here.
 */
function subscriberFunction(
  trigger: string,
  ref: { apiVersion: string; kind: string; name: string } | undefined,
) {
  const isService =
    ref?.kind === 'Service' && (ref.apiVersion.startsWith('serving.knative.dev/') || ref.apiVersion === 'v1');
  if (!ref || !isService) {
    throw invalid(
      'UnroutableTrigger',
      `Trigger ${trigger}: its subscriber names no Service the chain harness runs`,
    );
  }
  return ref.name;
}

/** The Triggers of a kustomization directory (as the local stack loads it), in manifest order. */
export function loadTriggerRoutes(dir: string = manifestsDir): TriggerRoute[] {
  const objects = loadKustomization(dir);
  const brokers = new Set(
    objectsOfKind(objects, 'eventing.knative.dev', 'Broker').map(
      (b) => `${b.metadata?.namespace}/${b.metadata?.name}`,
    ),
  );
  return objectsOfKind(objects, 'eventing.knative.dev', 'Trigger').flatMap((object) => {
    const parsed = triggerObjectSchema.safeParse(object);
    if (!parsed.success) {
      throw invalid('InvalidKnativeObject', `Trigger ${object.metadata?.name}: ${parsed.error.message}`);
    }
    const { metadata, spec } = parsed.data;
    // A Trigger on a Broker the manifests do not hold never becomes Ready: it routes nothing.
    if (!brokers.has(`${metadata.namespace}/${spec.broker}`)) return [];
    return [
      {
        trigger: metadata.name,
        subscriber: subscriberFunction(metadata.name, spec.subscriber.ref),
        filter: compileTriggerFilter(spec),
      },
    ];
  });
}

/**
 * The functions an event is delivered to: one entry per Trigger whose filter does not fail (as a
 * Broker delivers once per Trigger), in the Triggers' order.
 */
export function routeEvent(routes: readonly TriggerRoute[], event: CloudEvent<unknown>): string[] {
  const raw = rawEventOf(event);
  return routes.flatMap((route) => (route.filter(raw) === 'fail' ? [] : [route.subscriber]));
}

let shipped: TriggerRoute[] | undefined;

/** The functions the Triggers of manifests/ deliver an event to. */
export function routesFor(event: CloudEvent<unknown>): string[] {
  shipped ??= loadTriggerRoutes();
  return routeEvent(shipped, event);
}
