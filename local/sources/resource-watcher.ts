import {
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  Watch,
  type KubeConfig,
} from '@kubernetes/client-node';
import { BpaError } from '../../shared/errors.js';
import type { Logger } from '../../shared/log.js';
import { sleep } from '../broker/concurrency.js';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';
export type KubeObject = {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    resourceVersion?: string;
    ownerReferences?: { apiVersion: string; kind: string; name: string; controller?: boolean }[];
  };
} & Record<string, unknown>;

/** The plural resource name and scope of an apiVersion/kind, from API discovery. */
export async function discoverResource(
  kubeConfig: KubeConfig,
  apiVersion: string,
  kind: string,
): Promise<{ plural: string; namespaced: boolean }> {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  const list = group
    ? await kubeConfig.makeApiClient(CustomObjectsApi).getAPIResources({ group: group!, version: version! })
    : await kubeConfig.makeApiClient(CoreV1Api).getAPIResources();
  const resource = list.resources.find((r) => r.kind === kind && !r.name.includes('/'));
  if (!resource)
    throw new BpaError('ResourceNotFound', `the API server serves no ${kind} in ${apiVersion}`, 'invalid');
  return { plural: resource.name, namespaced: resource.namespaced };
}

export interface WatcherOptions {
  kubeConfig: KubeConfig;
  apiVersion: string;
  kind: string;
  /** undefined = all namespaces. */
  namespace?: string;
  labelSelector?: string;
  /** Live watch events, called one at a time in order (the next waits for the promise). */
  onEvent: (type: WatchEventType, object: KubeObject) => Promise<void>;
  /** Objects of the initial list (used only for opt-in replay). */
  onInitialList?: (objects: KubeObject[]) => Promise<void>;
  log: Logger;
}

/**
 * A list-then-watch loop like client-go's Reflector feeding Knative's adapter: the initial LIST
 * and any re-LIST (after 410 Gone) are silent; each ADDED/MODIFIED/DELETED of the live watch is
 * passed on; after a disconnect the watch resumes from the last resourceVersion seen.
 */
export class ResourceWatcher {
  private abort: AbortController | undefined;
  private stopped = false;
  private resourceVersion = '';
  private queue: Promise<void> = Promise.resolve();
  private readonly stopSignal = new AbortController();
  private watchPath = '';

  constructor(private readonly options: WatcherOptions) {}

  /** Lists (silently), then starts watching; resolves once the watch is open. */
  async start(): Promise<void> {
    const { kubeConfig, apiVersion, kind, namespace } = this.options;
    const { plural, namespaced } = await discoverResource(kubeConfig, apiVersion, kind);
    const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
    this.watchPath =
      namespaced && namespace ? `${base}/namespaces/${namespace}/${plural}` : `${base}/${plural}`;
    const items = await this.list();
    if (this.options.onInitialList) {
      const withKind = items.map((item) => ({ ...item, apiVersion, kind }));
      this.queue = this.queue.then(() => this.options.onInitialList!(withKind));
    }
    await this.watch();
  }

  private async list(): Promise<KubeObject[]> {
    const { kubeConfig, apiVersion, kind, namespace, labelSelector } = this.options;
    const api = KubernetesObjectApi.makeApiClient(kubeConfig);
    const list = await api.list(
      apiVersion,
      kind,
      namespace,
      undefined,
      undefined,
      undefined,
      undefined,
      labelSelector,
    );
    this.resourceVersion = list.metadata?.resourceVersion ?? '';
    return list.items as KubeObject[];
  }

  private async watch(): Promise<void> {
    if (this.stopped) return;
    let expired = false;
    const done = (error: unknown) => {
      if (this.stopped) return;
      const status = (error as { statusCode?: number } | null)?.statusCode;
      void this.reconnect(expired || status === 410, error);
    };
    this.abort = await new Watch(this.options.kubeConfig).watch(
      this.watchPath,
      {
        resourceVersion: this.resourceVersion,
        allowWatchBookmarks: true,
        labelSelector: this.options.labelSelector,
      },
      (type, object: KubeObject) => {
        if (type === 'ERROR') {
          if ((object as { code?: number }).code === 410) expired = true;
          else this.options.log.warn('watch error', { path: this.watchPath, status: object });
          return;
        }
        const version = object.metadata?.resourceVersion;
        if (version) this.resourceVersion = version;
        if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') {
          this.queue = this.queue
            .then(() => this.options.onEvent(type, object))
            .catch((error: unknown) =>
              this.options.log.error('watch event handler failed', { error: String(error) }),
            );
        }
      },
      done,
    );
    // Watch.watch resolves once the API server has answered the request: the watch is open.
  }

  private async reconnect(relist: boolean, error: unknown): Promise<void> {
    if (error) {
      this.options.log.debug('watch ended; reconnecting', { path: this.watchPath, error: String(error) });
      // A refused connection ends the watch at once: do not spin.
      await sleep(500, this.stopSignal.signal);
    }
    for (let attempt = 0; !this.stopped; attempt++) {
      try {
        if (relist) await this.list();
        await this.watch();
        return;
      } catch (failure) {
        const status = (failure as { statusCode?: number; code?: number }).statusCode;
        relist = relist || status === 410;
        this.options.log.warn('watch reconnect failed; retrying', {
          path: this.watchPath,
          error: String(failure),
        });
        await sleep(Math.min(200 * 2 ** attempt, 5000), this.stopSignal.signal);
      }
    }
  }

  /** Ends the watch and waits for events already being handled. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopSignal.abort();
    this.abort?.abort();
    await this.queue;
  }
}
