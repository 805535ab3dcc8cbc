import { ListWatch, Watch, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { describeError } from '../errors.js';
import type { Logger } from '../log.js';
import { callApi } from './api-errors.js';
import { kubeClients, type KubeClients } from './clients.js';
import type { StatusTarget } from './custom-objects.js';
import type { CustomResource } from './resources.js';
import type { StoredObject } from './stored-object.js';

/**
 * Objects as the API server's own watch sends them, kept in memory while the function server runs
 * (issue 26 item 4: API requests per Provisioning), in two ways:
 * - `at`: the object at exactly the version an event names (uid and resourceVersion). That is the
 *   object the API server stored at that version, from its own watch, never from the event. The
 *   shared step's prologue (define-step.ts) takes it instead of a GET; anything else (the watch
 *   not started or down, the object at another version, newer or not arrived yet) is a GET, as
 *   without the watch. So it can save a read but never change what a step sees, and a forged
 *   event naming the current version gets what a GET would give.
 * - `latest`: the object as the watch last sent it, or that it is absent, only while the watch is
 *   up (else undefined: read it). For objects no event points at (the installer settings, the KUD
 *   Job); the caller says when that is as good as a read (functions/kud-job-launch/launch-job.ts).
 *
 * Started on first use in the background (one list, then a watch: client-node's ListWatch, which
 * re-lists after 410 Gone); a lookup never waits for it. After a watch error it restarts after
 * `restartDelayMs`; meanwhile every lookup misses. `maxObjects` bounds the memory: beyond it the
 * watch stops and every lookup misses (logged once), as on a fleet too large to keep.
 * Objects are kept as the API sends them (JSON): the list is read raw, like the watch, so a
 * typed client's conversions (dates) never mix in.
 */

/**
 * The items of a list carry no apiVersion or kind; a GET's object and a watch event's do: each
 * item is given them, so what the watch holds has the shape of a read.
 */
async function listWithKinds(apiVersion: string, listed: Promise<unknown>): Promise<unknown> {
  const list = (await listed) as { kind?: string; items?: Record<string, unknown>[] };
  const kind = list.kind?.replace(/List$/, '');
  return {
    ...list,
    items: (list.items ?? []).map((item) => ({ apiVersion, ...(kind ? { kind } : {}), ...item })),
  };
}

const restartDelayMs = 2_000;
const defaultMaxObjects = 20_000;

/** What one watch lists and watches. */
export interface WatchSource {
  /** A name for logs and for `WatchedObjects.of` (`<group>/<plural>`, or the core plural). */
  key: string;
  /** The collection's API path (`/apis/<group>/<version>[/namespaces/<ns>]/<plural>`). */
  path: string;
  /** The plural, for log lines ("<plural> watch started"). */
  plural: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** The same collection, listed raw (JSON as the API sends it). */
  list: (clients: KubeClients) => Promise<unknown>;
}

/** The key of a custom resource's watch: how the prologue finds it from an event's target. */
const customResourceKey = (resource: CustomResource) => `${resource.group}/${resource.plural}`;

/** The watch of a custom resource in all namespaces (the step's objects: a Provisioning). */
export function customResourceWatch(resource: CustomResource): WatchSource {
  const { group, version, plural } = resource;
  return {
    key: customResourceKey(resource),
    path: `/apis/${group}/${version}/${plural}`,
    plural,
    list: (clients) =>
      listWithKinds(
        `${group}/${version}`,
        clients.custom.listClusterCustomObject({ group, version, plural }),
      ),
  };
}

/** A watch of one namespace's objects of an API group other than core (Jobs), by label if given. */
export function namespacedWatch(options: {
  key: string;
  group: string;
  version: string;
  plural: string;
  namespace: string;
  labelSelector?: string;
}): WatchSource {
  const { group, version, plural, namespace, labelSelector } = options;
  return {
    key: options.key,
    path: `/apis/${group}/${version}/namespaces/${namespace}/${plural}`,
    plural,
    ...(labelSelector ? { labelSelector } : {}),
    // The custom objects client lists any group's collection raw, built-in ones too.
    list: (clients) =>
      listWithKinds(
        `${group}/${version}`,
        clients.custom.listNamespacedCustomObject({ group, version, namespace, plural, labelSelector }),
      ),
  };
}

/** A watch of one core ConfigMap by name. */
export function configMapWatch(key: string, namespace: string, name: string): WatchSource {
  const fieldSelector = `metadata.name=${name}`;
  return {
    key,
    path: `/api/v1/namespaces/${namespace}/configmaps`,
    plural: 'configmaps',
    fieldSelector,
    // A ConfigMap's data is the same typed or raw; only its data is read from here.
    list: (clients) => clients.core.listNamespacedConfigMap({ namespace, fieldSelector }),
  };
}

const keyOf = (namespace: string | undefined, name: string) => `${namespace ?? ''}/${name}`;

interface Versioned {
  uid?: string;
  resourceVersion?: string;
}

export class WatchedList {
  private readonly objects = new Map<string, KubernetesObject>();
  private informer?: ListWatch<KubernetesObject>;
  private starting?: Promise<void>;
  private live = false;
  private stopped = false;
  private restartTimer?: NodeJS.Timeout;
  /** Lookups answered from memory and lookups left to a read (tests look at them). */
  readonly counts = { hits: 0, misses: 0 };

  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly source: WatchSource,
    private readonly log: Logger,
    private readonly maxObjects = defaultMaxObjects,
  ) {}

  /**
   * The object `namespace/name` if the watch holds it at exactly `version` (uid and
   * resourceVersion), as a copy the caller may change; otherwise undefined (the caller reads).
   * The first call starts the watch.
   */
  at<T = StoredObject>(namespace: string, name: string, version: Versioned): T | undefined {
    this.ensureStarted();
    const held = this.live ? this.objects.get(keyOf(namespace, name)) : undefined;
    const metadata = held?.metadata;
    const exact =
      metadata !== undefined &&
      version.uid !== undefined &&
      version.resourceVersion !== undefined &&
      metadata.uid === version.uid &&
      metadata.resourceVersion === version.resourceVersion;
    if (!exact) {
      this.counts.misses += 1;
      return undefined;
    }
    this.counts.hits += 1;
    return structuredClone(held) as T;
  }

  /**
   * While the watch is up: `{ object }`, the object as the watch last sent it (a copy), or
   * `{ object: undefined }` when it holds none of that name. Undefined while the watch is not up
   * (the caller reads). The first call starts the watch.
   */
  latest<T = KubernetesObject>(
    namespace: string | undefined,
    name: string,
  ): { object: T | undefined } | undefined {
    this.ensureStarted();
    if (!this.live) {
      this.counts.misses += 1;
      return undefined;
    }
    this.counts.hits += 1;
    const held = this.objects.get(keyOf(namespace, name));
    return { object: held === undefined ? undefined : (structuredClone(held) as T) };
  }

  /** Whether the list is in and the watch connected (tests wait on it). */
  get started(): boolean {
    return this.live;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.live = false;
    clearTimeout(this.restartTimer);
    await this.starting?.catch(() => undefined);
    await this.informer?.stop();
    this.objects.clear();
  }

  private ensureStarted(): void {
    if (this.live || this.stopped || this.starting) return;
    this.starting = this.start()
      .catch((error: unknown) => this.onError(error))
      .finally(() => (this.starting = undefined));
  }

  private async start(): Promise<void> {
    const { source } = this;
    if (!this.informer) {
      const clients = kubeClients(this.kubeConfig);
      const informer = new ListWatch<KubernetesObject>(
        source.path,
        new Watch(this.kubeConfig),
        async () => {
          const list = (await callApi(`list ${source.plural} (${source.path})`, () =>
            source.list(clients),
          )) as {
            metadata?: { resourceVersion?: string };
            items?: KubernetesObject[];
          };
          return { metadata: list.metadata ?? {}, items: list.items ?? [] } as never;
        },
        false,
        source.labelSelector,
        source.fieldSelector,
      );
      const keep = (object: KubernetesObject) => {
        const key = keyOf(object.metadata?.namespace, object.metadata?.name ?? '');
        if (this.objects.size >= this.maxObjects && !this.objects.has(key)) return this.onTooMany();
        this.objects.set(key, object);
      };
      informer.on('add', keep);
      informer.on('update', keep);
      informer.on('delete', (object) =>
        this.objects.delete(keyOf(object.metadata?.namespace, object.metadata?.name ?? '')),
      );
      informer.on('error', (error: unknown) => this.onError(error));
      this.informer = informer;
    }
    // A restart keeps what it has: ListWatch watches on from its last version, or lists again
    // after 410 Gone and reports each object that went away as a delete.
    let failed = false;
    const noteFailure = () => (failed = true);
    this.informer.on('error', noteFailure);
    try {
      await this.informer.start();
    } finally {
      this.informer.off('error', noteFailure);
    }
    this.live = !failed && !this.stopped;
    if (this.live)
      this.log.info(`${source.plural} watch started`, { path: source.path, objects: this.objects.size });
  }

  private onError(error: unknown): void {
    this.live = false;
    if (this.stopped) return;
    this.log.warn(`${this.source.plural} watch stopped; reads go to the API until it restarts`, {
      path: this.source.path,
      ...describeError(error),
    });
    clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => this.ensureStarted(), restartDelayMs);
    this.restartTimer.unref();
  }

  private onTooMany(): void {
    if (this.stopped) return;
    this.log.warn(
      `more than ${this.maxObjects} ${this.source.plural}: the watch stops, and reads go to the API`,
      {
        path: this.source.path,
      },
    );
    void this.stop();
  }
}

/**
 * The watches of one function server (or func process): the ones its definition names
 * (`FunctionDefinition.watches`), each started on first use, all stopped when the server closes.
 */
export class WatchedObjects {
  private readonly byKey = new Map<string, WatchedList>();

  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly sources: readonly WatchSource[],
    private readonly log: Logger,
  ) {}

  /** The watch of that key, or undefined when the function does not keep it. */
  of(key: string): WatchedList | undefined {
    let watched = this.byKey.get(key);
    if (watched) return watched;
    const source = this.sources.find((s) => s.key === key);
    if (!source) return undefined;
    watched = new WatchedList(this.kubeConfig, source, this.log);
    this.byKey.set(key, watched);
    return watched;
  }

  /** The object a step's event points at, when the watch holds it at the version the event shows. */
  at(target: StatusTarget, version: Versioned): StoredObject | undefined {
    return this.of(customResourceKey(target.resource))?.at(target.namespace, target.name, version);
  }

  async stop(): Promise<void> {
    const all = [...this.byKey.values()];
    this.byKey.clear();
    await Promise.all(all.map((watched) => watched.stop().catch(() => undefined)));
  }
}
