import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../../shared/log.js';
import type { RefResolver } from '../broker/index.js';
import {
  startApiServerSources,
  startPingSources,
  type PingEmission,
  type RunningApiServerSources,
  type RunningPingSources,
  type SourceEmission,
} from '../sources/index.js';

export interface LocalSources {
  /** Sends a ping from every PingSource now (the sweep on demand). */
  ping(): Promise<void>;
  stop(): Promise<void>;
}

export interface StartLocalSourcesOptions {
  objects: readonly unknown[];
  kubeConfig: KubeConfig;
  resolveRef: RefResolver;
  replay: boolean;
  defaultNamespace: string;
  pingIntervalMs?: number;
  logger: (component: string) => Logger;
  onEmit?: (emission: SourceEmission | PingEmission) => void;
}

/** The manifests' ApiServerSources and PingSource, run locally; resolves once every watch is open. */
export async function startLocalSources(options: StartLocalSourcesOptions): Promise<LocalSources> {
  const apiServer: RunningApiServerSources = await startApiServerSources({
    objects: options.objects,
    kubeConfig: options.kubeConfig,
    resolveRef: options.resolveRef,
    replay: options.replay,
    defaultNamespace: options.defaultNamespace,
    log: options.logger('apiserversource'),
    ...(options.onEmit ? { onEmit: options.onEmit } : {}),
  });
  let ping: RunningPingSources;
  try {
    ping = await startPingSources({
      objects: options.objects,
      resolveRef: options.resolveRef,
      defaultNamespace: options.defaultNamespace,
      log: options.logger('pingsource'),
      ...(options.pingIntervalMs ? { intervalMs: options.pingIntervalMs } : {}),
      ...(options.onEmit ? { onEmit: options.onEmit } : {}),
    });
  } catch (error) {
    await apiServer.stop();
    throw error;
  }
  return {
    ping: async () => void (await ping.trigger()),
    stop: async () => {
      await Promise.allSettled([ping.stop(), apiServer.stop()]);
    },
  };
}
