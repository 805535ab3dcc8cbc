import { Watch, type KubeConfig } from '@kubernetes/client-node';
import { kubeClients } from '../../shared/k8s/clients.js';
import type { CustomResource } from '../../shared/k8s/resources.js';
import type { Logger } from '../../shared/log.js';

export type KubeObject = {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
} & Record<string, unknown>;

export interface ResourceWatchOptions {
  kubeConfig: KubeConfig;
  resource: CustomResource;
  /** Whole list after each (re-)list: the caller replaces what it holds. */
  onList: (items: KubeObject[]) => void;
  onChange: (type: 'ADDED' | 'MODIFIED' | 'DELETED', object: KubeObject) => void;
  log: Logger;
  /** Wait before re-listing after the watch ends or fails. */
  retryDelayMs?: number;
}

export interface ResourceWatch {
  /** Resolves once the first list has been delivered. */
  ready: Promise<void>;
  stop(): void;
}

/**
 * List-then-watch of one custom resource across all namespaces, re-listing whenever the
 * watch ends (timeouts, 410 Gone, API restarts): the informer pattern without a cache.
 */
export function watchCustomResource(options: ResourceWatchOptions): ResourceWatch {
  const { kubeConfig, resource, log } = options;
  const retryDelayMs = options.retryDelayMs ?? 1000;
  const custom = kubeClients(kubeConfig).custom;
  const watch = new Watch(kubeConfig);
  const path = `/apis/${resource.group}/${resource.version}/${resource.plural}`;
  let stopped = false;
  let abort: AbortController | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));

  const scheduleRestart = () => {
    if (stopped) return;
    retryTimer = setTimeout(() => void cycle(), retryDelayMs);
  };

  const cycle = async () => {
    if (stopped) return;
    try {
      const list = (await custom.listClusterCustomObject({
        group: resource.group,
        version: resource.version,
        plural: resource.plural,
      })) as { items?: KubeObject[]; metadata?: { resourceVersion?: string } };
      if (stopped) return;
      options.onList(list.items ?? []);
      markReady();
      abort = await watch.watch(
        path,
        { resourceVersion: list.metadata?.resourceVersion, allowWatchBookmarks: false },
        (phase, object: KubeObject) => {
          if (phase === 'ADDED' || phase === 'MODIFIED' || phase === 'DELETED')
            options.onChange(phase, object);
        },
        (error: unknown) => {
          if (error && !stopped) log.debug('watch ended', { path, error: String(error) });
          scheduleRestart();
        },
      );
      if (stopped) abort.abort();
    } catch (error) {
      if (!stopped) log.debug('list failed', { path, error: String(error) });
      scheduleRestart();
    }
  };
  void cycle();

  return {
    ready,
    stop() {
      stopped = true;
      if (retryTimer) clearTimeout(retryTimer);
      abort?.abort();
    },
  };
}
