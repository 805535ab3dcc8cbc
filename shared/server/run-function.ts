import type { KubeConfig } from '@kubernetes/client-node';
import type { Env } from '../config.js';
import { describeError } from '../errors.js';
import { loadDefaultKubeConfig } from '../k8s/clients.js';
import { createLogger, type Logger } from '../log.js';
import { startFunctionServer, type RunningFunctionServer } from './function-server.js';
import type { FunctionDefinition } from './types.js';

export interface RunFunctionOptions {
  env?: Env;
  /** Default: KUBECONFIG, else ~/.kube/config, else the in-cluster service account. */
  kubeConfig?: KubeConfig;
  log?: Logger;
  /** Default true: exit the process when shut down or when start-up fails. */
  exitProcess?: boolean;
}

/**
 * The container entry point of a function: starts its server on HOST:PORT (0.0.0.0:8080 by
 * default) and, on SIGTERM or SIGINT, drains it (readiness turns 503, in-flight requests
 * finish within SHUTDOWN_GRACE_SECONDS) and exits 0. Start-up failures (invalid config, port
 * taken) are logged as one JSON line and exit 1.
 *
 *   // functions/<name>/main.ts
 *   await runFunction(definition);
 */
export async function runFunction<Config>(
  definition: FunctionDefinition<Config>,
  options: RunFunctionOptions = {},
): Promise<RunningFunctionServer | undefined> {
  const log = options.log ?? createLogger();
  const exitProcess = options.exitProcess ?? true;
  let server: RunningFunctionServer;
  try {
    const kubeConfig = options.kubeConfig ?? loadDefaultKubeConfig();
    server = await startFunctionServer({ definition, kubeConfig, env: options.env ?? process.env, log });
  } catch (error) {
    log.error('function failed to start', { function: definition.name, ...describeError(error) });
    if (exitProcess) process.exit(1);
    throw error;
  }
  const stop = (signal: NodeJS.Signals) => {
    process.off('SIGTERM', stop);
    process.off('SIGINT', stop);
    log.info('signal received, shutting down', { function: definition.name, signal });
    server.close().then(
      () => {
        if (exitProcess) process.exit(0);
      },
      (error: unknown) => {
        log.error('shutdown failed', { function: definition.name, ...describeError(error) });
        if (exitProcess) process.exit(1);
      },
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  return server;
}
