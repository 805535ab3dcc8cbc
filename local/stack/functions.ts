import type { KubeConfig } from '@kubernetes/client-node';
import type { Env } from '../../shared/config.js';
import type { Logger } from '../../shared/log.js';
import {
  startFunctionServer,
  type FunctionServerOptions,
  type RunningFunctionServer,
} from '../../shared/server/function-server.js';
import { definition as hostLookup } from '../../functions/host-lookup/index.js';
import { definition as inventoryRender } from '../../functions/inventory-render/index.js';
import { definition as kudJobLaunch } from '../../functions/kud-job-launch/index.js';
import { definition as softwareInstall } from '../../functions/software-install/index.js';
import type { FunctionName } from './function-names.js';

type ServerOptions = Omit<FunctionServerOptions<unknown>, 'definition'>;

// One starter per function keeps each definition's Config type intact.
const starters: Record<FunctionName, (options: ServerOptions) => Promise<RunningFunctionServer>> = {
  'host-lookup': (options) => startFunctionServer({ ...options, definition: hostLookup }),
  'inventory-render': (options) => startFunctionServer({ ...options, definition: inventoryRender }),
  'kud-job-launch': (options) => startFunctionServer({ ...options, definition: kudJobLaunch }),
  'software-install': (options) => startFunctionServer({ ...options, definition: softwareInstall }),
};

export interface RunningFunction {
  name: FunctionName;
  url: string;
  server: RunningFunctionServer;
}

export interface StartFunctionsOptions {
  host: string;
  kubeConfig: KubeConfig;
  /** The broker ingress the sweep sends to (K_SINK). */
  sinkUrl: string;
  /** Env of every function; per-function extras on top. */
  env: Env;
  envFor?: Partial<Record<FunctionName, Env>>;
  logger: (name: FunctionName) => Logger;
  /** A function's own Kubernetes client instead of `kubeConfig` (the scale bench counts reads). */
  kubeConfigFor?: (name: FunctionName) => KubeConfig | undefined;
  /** Functions served elsewhere: not started here. */
  skip?: readonly FunctionName[];
}

/** Starts the four functions, each with the real HTTP server on its own free port. */
export async function startFunctions(options: StartFunctionsOptions): Promise<RunningFunction[]> {
  const started: RunningFunction[] = [];
  try {
    for (const [name, start] of Object.entries(starters) as [
      FunctionName,
      (o: ServerOptions) => Promise<RunningFunctionServer>,
    ][]) {
      if (options.skip?.includes(name)) continue;
      const env: Env = {
        ...options.env,
        ...options.envFor?.[name],
        K_SERVICE: name,
        K_SINK: options.sinkUrl,
      };
      const server = await start({
        host: options.host,
        port: 0,
        kubeConfig: options.kubeConfigFor?.(name) ?? options.kubeConfig,
        env,
        sink: options.sinkUrl,
        log: options.logger(name),
        shutdownGraceMs: 5000,
      });
      started.push({ name, url: server.url, server });
    }
  } catch (error) {
    await Promise.allSettled(started.map((f) => f.server.close()));
    throw error;
  }
  return started;
}
