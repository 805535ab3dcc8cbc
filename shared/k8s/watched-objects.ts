import { ListWatch, Watch, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { describeError } from '../errors.js';
import type { Logger } from '../log.js';
import { callApi } from './api-errors.js';
import { kubeClients } from './clients.js';
import type { StatusTarget } from './custom-objects.js';
import type { CustomResource } from './resources.js';
import type { StoredObject } from './stored-object.js';

/**
 * The objects of a custom resource as the API server's own watch sends them, kept in memory while
 * the function server runs (issue 26 item 4: API requests per Provisioning). The shared step's
 * prologue (define-step.ts) takes an object from here only at the exact version the event names
 * (uid and resourceVersion): that is the object the API server stored at that version, from its
 * own watch, never from the event. Anything else — the watch not started or down, the object at
 * another version (newer, or not arrived yet) — is a GET, as without the watch. So the watch can
 * save a read but never change what a step sees, and a forged event naming the current version
 * gets what a GET would give.
 *
 * Started on first use in the background (one list, then a watch: client-node's ListWatch, which
 * re-lists after 410 Gone); a lookup never waits for it. After a watch error it restarts after
 * `restartDelayMs`; meanwhile every lookup misses. `maxObjects` bounds the memory: beyond it the
 * watch stops and every lookup misses (logged once), as on a fleet too large to keep.
 */

const restartDelayMs = 2_000;
const defaultMaxObjects = 20_000;

const keyOf = (namespace: string | undefined, name: string) => `${namespace ?? ''}/${name}`;

interface Versioned {
  uid?: string;
  resourceVersion?: string;
}

export class WatchedResource {
  private readonly objects = new Map<string, KubernetesObject>();
  private informer?: ListWatch<KubernetesObject>;
  private starting?: Promise<void>;
  private live = false;
  private stopped = false;
  private restartTimer?: NodeJS.Timeout;
  /** Lookups answered from memory and lookups that went to a GET (the bench reads them). */
  readonly counts = { hits: 0, misses: 0 };

  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly resource: CustomResource,
    private readonly log: Logger,
    private readonly maxObjects = defaultMaxObjects,
  ) {}

  /**
   * The object `namespace/name` if the watch holds it at exactly `version` (uid and
   * resourceVersion), as a copy the caller may change; otherwise undefined (the caller reads).
   * The first call starts the watch.
   */
  at(namespace: string, name: string, version: Versioned): StoredObject | undefined {
    this.ensureStarted();
    const held = this.live ? this.objects.get(keyOf(namespace, name)) : undefined;
    const metadata = held?.metadata;
    if (
      !metadata ||
      !version.uid ||
      !version.resourceVersion ||
      metadata.uid !== version.uid ||
      metadata.resourceVersion !== version.resourceVersion
    ) {
      this.counts.misses += 1;
      return undefined;
    }
    this.counts.hits += 1;
    return structuredClone(held) as StoredObject;
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
    const { group, version, plural } = this.resource;
    if (!this.informer) {
      const clients = kubeClients(this.kubeConfig);
      const informer = new ListWatch<KubernetesObject>(
        `/apis/${group}/${version}/${plural}`,
        new Watch(this.kubeConfig),
        async () => {
          const list = (await callApi(`list ${plural} in all namespaces`, () =>
            clients.custom.listClusterCustomObject({ group, version, plural }),
          )) as { metadata?: { resourceVersion?: string }; items?: KubernetesObject[] };
          // Items of a list carry no kind or apiVersion; a GET's object does: the same shape here.
          const apiVersion = `${group}/${version}`;
          const kind = (list as { kind?: string }).kind?.replace(/List$/, '');
          const items = (list.items ?? []).map((item) => ({
            apiVersion,
            ...(kind ? { kind } : {}),
            ...item,
          }));
          return { metadata: list.metadata ?? {}, items } as never;
        },
        false,
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
    if (this.live) this.log.info(`${plural} watch started`, { objects: this.objects.size });
  }

  private onError(error: unknown): void {
    this.live = false;
    if (this.stopped) return;
    this.log.warn(
      `${this.resource.plural} watch stopped; reads go to the API until it restarts`,
      describeError(error),
    );
    clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => this.ensureStarted(), restartDelayMs);
    this.restartTimer.unref();
  }

  private onTooMany(): void {
    if (this.stopped) return;
    this.log.warn(
      `more than ${this.maxObjects} ${this.resource.plural}: the watch stops, and reads go to the API`,
    );
    void this.stop();
  }
}

/**
 * The watches of one function server (or func process): one per resource its definition names
 * (`FunctionDefinition.watches`), each started on first use, all stopped when the server closes.
 */
export class WatchedObjects {
  private readonly byResource = new Map<string, WatchedResource>();

  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly resources: readonly CustomResource[],
    private readonly log: Logger,
  ) {}

  /** The watch of `resource`, or undefined when the function does not watch it. */
  of(resource: CustomResource): WatchedResource | undefined {
    const key = `${resource.group}/${resource.plural}`;
    let watched = this.byResource.get(key);
    if (watched) return watched;
    const named = this.resources.some((r) => r.group === resource.group && r.plural === resource.plural);
    if (!named) return undefined;
    watched = new WatchedResource(this.kubeConfig, resource, this.log);
    this.byResource.set(key, watched);
    return watched;
  }

  /** The object a step's event points at, when the watch holds it at the version the event shows. */
  at(target: StatusTarget, version: Versioned): StoredObject | undefined {
    return this.of(target.resource)?.at(target.namespace, target.name, version);
  }

  async stop(): Promise<void> {
    const all = [...this.byResource.values()];
    this.byResource.clear();
    await Promise.all(all.map((watched) => watched.stop().catch(() => undefined)));
  }
}
