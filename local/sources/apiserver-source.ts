import { randomUUID } from 'node:crypto';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { z } from 'zod';
import { invalid } from '../../shared/errors.js';
import { createLogger, type Logger } from '../../shared/log.js';
import type { RawEvent } from '../../shared/cloudevents/http-codec.js';
import { resolveDestination, type RefResolver } from '../broker/load-config.js';
import { guessPlural } from './plural.js';
import { ResourceWatcher, type KubeObject, type WatchEventType } from './resource-watcher.js';
import { SinkSender, type SendResult } from './sink-sender.js';
import {
  apiServerSourceSchema,
  labelSelectorString,
  sourcesOfKind,
  type ApiServerSourceObject,
  type LabelSelector,
} from './source-objects.js';

/** One CloudEvent the local ApiServerSource sent (or tried to). */
export interface SourceEmission {
  source: string;
  eventType: string;
  subject: string;
  eventId: string;
  sink: string;
  result: SendResult;
}

export interface StartApiServerSourcesOptions {
  /** Kubernetes objects as parsed from YAML; `sources.knative.dev/v1` ApiServerSources are picked out. */
  objects: readonly unknown[];
  kubeConfig: KubeConfig;
  resolveRef: RefResolver;
  /** Opt-in: emit `add` for objects that exist at start (Knative never does). */
  replay?: boolean;
  defaultNamespace?: string;
  log?: Logger;
  onEmit?: (emission: SourceEmission) => void;
}

export interface RunningApiServerSources {
  /** Ends every watch and waits for events being sent. */
  stop(): Promise<void>;
}

const typePrefix = {
  Resource: 'dev.knative.apiserver.resource',
  Reference: 'dev.knative.apiserver.ref',
} as const;
const verbs: Record<WatchEventType, string> = { ADDED: 'add', MODIFIED: 'update', DELETED: 'delete' };

/** `/apis/<apiVersion>/namespaces/<ns>/<plural>/<name>`, as the adapter's `createSelfLink`. */
export function apiServerSubject(object: {
  apiVersion: string;
  kind: string;
  name: string;
  namespace: string;
}): string {
  let version = object.apiVersion;
  if (version.includes('.') && !version.includes('/')) version = `${version}/versionUnknown`;
  return `/apis/${version}/namespaces/${object.namespace}/${guessPlural(object.kind)}/${object.name}`;
}

/** The CloudEvent Knative's adapter makes for one watch event (fresh id and time each time). */
export function makeApiServerEvent(
  source: string,
  mode: 'Resource' | 'Reference',
  verb: 'add' | 'update' | 'delete',
  object: KubeObject,
  extensions: Record<string, string> = {},
): RawEvent {
  const apiVersion = object.apiVersion ?? '';
  const kind = object.kind ?? '';
  const name = object.metadata?.name ?? '';
  const namespace = object.metadata?.namespace ?? '';
  // corev1.ObjectReference's JSON field order (kind, namespace, name, apiVersion), empty fields omitted.
  const reference = Object.fromEntries(
    Object.entries({ kind, namespace, name, apiVersion }).filter(([, value]) => value !== ''),
  );
  const data = mode === 'Resource' ? object : reference;
  return {
    attributes: {
      specversion: '1.0',
      id: randomUUID(),
      source,
      type: `${typePrefix[mode]}.${verb}`,
      subject: apiServerSubject({ apiVersion, kind, name, namespace }),
      time: new Date().toISOString(),
      datacontenttype: 'application/json',
      kind,
      apiversion: apiVersion,
      name,
      namespace,
      ...extensions,
    },
    data: Buffer.from(JSON.stringify(data), 'utf8'),
  };
}

/** Keeps objects whose controller ownerReference matches (empty owner fields match anything). */
export function passesOwnerFilter(
  object: KubeObject,
  owner: { apiVersion?: string; kind?: string } | undefined,
): boolean {
  if (!owner) return true;
  const controller = object.metadata?.ownerReferences?.find((reference) => reference.controller === true);
  if (!controller) return false;
  if (owner.apiVersion && owner.apiVersion !== controller.apiVersion) return false;
  if (owner.kind && owner.kind !== controller.kind) return false;
  return true;
}

/** Namespaces to watch: absent → the source's own; `{}` → all (undefined); labels → matching ones now. */
async function namespacesFor(
  kubeConfig: KubeConfig,
  selector: LabelSelector | undefined,
  ownNamespace: string,
): Promise<(string | undefined)[]> {
  if (!selector) return [ownNamespace];
  const query = labelSelectorString(selector);
  if (!query) return [undefined];
  const list = await kubeConfig.makeApiClient(CoreV1Api).listNamespace({ labelSelector: query });
  return list.items.map((item) => item.metadata!.name!);
}

/**
 * Runs every ApiServerSource found in `objects` against the given API server, emitting what
 * Knative's adapter emits: live watch events only (plus `replay`), binary mode, the adapter's
 * retry set. Namespaces picked by a label `namespaceSelector` are resolved at start.
 */
export async function startApiServerSources(
  options: StartApiServerSourcesOptions,
): Promise<RunningApiServerSources> {
  const log = options.log ?? createLogger({ base: { component: 'apiserversource' } });
  const sender = new SinkSender();
  const watchers: ResourceWatcher[] = [];
  const apiServerUrl = options.kubeConfig.getCurrentCluster()?.server ?? '';
  const sources: ApiServerSourceObject[] = sourcesOfKind(options.objects, 'ApiServerSource').map((object) => {
    const result = apiServerSourceSchema.safeParse(object);
    if (!result.success) {
      const name = (object as { metadata?: { name?: string } }).metadata?.name ?? '?';
      const issues = (result.error as z.ZodError).issues
        .map((i) => `${i.path.join('.')}: ${i.message}`)
        .join('; ');
      throw invalid('InvalidKnativeObject', `ApiServerSource ${name}: ${issues}`);
    }
    return result.data;
  });

  try {
    for (const source of sources) {
      const namespace = source.metadata.namespace ?? options.defaultNamespace ?? 'default';
      const mode = source.spec.mode ?? 'Reference';
      const sinkUrl = await resolveDestination(source.spec.sink, namespace, options.resolveRef);
      const extensions = source.spec.ceOverrides?.extensions ?? {};
      const emit = async (verb: 'add' | 'update' | 'delete', object: KubeObject) => {
        if (!passesOwnerFilter(object, source.spec.owner)) return;
        const event = makeApiServerEvent(apiServerUrl, mode, verb, object, extensions);
        const result = await sender.send(sinkUrl, event);
        if (!result.ok) {
          log.warn('event dropped: the sink did not accept it', {
            source: `${namespace}/${source.metadata.name}`,
            eventType: event.attributes.type,
            subject: event.attributes.subject,
            status: result.status,
            attempts: result.attempts,
            error: result.error,
          });
        }
        options.onEmit?.({
          source: `${namespace}/${source.metadata.name}`,
          eventType: event.attributes.type!,
          subject: event.attributes.subject!,
          eventId: event.attributes.id!,
          sink: sinkUrl,
          result,
        });
      };
      for (const watchNamespace of await namespacesFor(
        options.kubeConfig,
        source.spec.namespaceSelector,
        namespace,
      )) {
        for (const resource of source.spec.resources) {
          const labelSelector = labelSelectorString(resource.selector);
          const watcher = new ResourceWatcher({
            kubeConfig: options.kubeConfig,
            apiVersion: resource.apiVersion,
            kind: resource.kind,
            ...(watchNamespace ? { namespace: watchNamespace } : {}),
            ...(labelSelector ? { labelSelector } : {}),
            onEvent: (type, object) => emit(verbs[type] as 'add' | 'update' | 'delete', object),
            ...(options.replay
              ? {
                  onInitialList: async (objects: KubeObject[]) => {
                    for (const object of objects) await emit('add', object);
                  },
                }
              : {}),
            log,
          });
          await watcher.start();
          watchers.push(watcher);
        }
      }
      log.info('ApiServerSource watching', {
        source: `${namespace}/${source.metadata.name}`,
        mode,
        sink: sinkUrl,
        resources: source.spec.resources.map((r) => `${r.apiVersion}/${r.kind}`),
      });
    }
  } catch (error) {
    await Promise.all(watchers.map((watcher) => watcher.stop()));
    sender.close();
    throw error;
  }

  return {
    stop: async () => {
      await Promise.all(watchers.map((watcher) => watcher.stop()));
      sender.close();
    },
  };
}
