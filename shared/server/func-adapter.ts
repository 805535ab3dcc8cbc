import { CloudEvent } from 'cloudevents';
import type { KubeConfig } from '@kubernetes/client-node';
import { parseEnv, serverEnvSchema } from '../config.js';
import { describeError, httpStatusFor, invalid } from '../errors.js';
import { loadDefaultKubeConfig } from '../k8s/clients.js';
import { createLogger, type Logger } from '../log.js';
import { routeEvent } from './accepts.js';
import { eventLogFields } from './event-scope.js';
import { namespaceRefused } from './invoke.js';
import { OwnWrites } from '../k8s/own-writes.js';
import { WatchedObjects } from '../k8s/watched-objects.js';
import { ObjectQueue } from './object-queue.js';
import { postToSink, type Sink } from './sink.js';
import type { FunctionContext, FunctionDefinition, HandlerResult } from './types.js';

/**
 * The func convention's `handle(context, event)`: run by faas-js-runtime (`func build` /
 * `func deploy`), whose context has none of ours (kubeConfig, config, send), or called with
 * our own FunctionContext (the project's function server, tests), which goes straight through.
 */
export type FuncHandle = (context: object, event: unknown) => Promise<HandlerResult>;

/** faas-js-runtime answers `error.code` as the HTTP status; the function server reads statusCode. */
export class FuncHttpError extends Error {
  readonly statusCode: number;
  readonly code: number;
  constructor(status: number, reason: string, message: string) {
    super(message);
    this.name = reason;
    this.statusCode = status;
    this.code = status;
  }
}

interface ProcessScope<Config> {
  kubeConfig: KubeConfig;
  config: Config;
  sink: Sink;
  log: Logger;
  queue: ObjectQueue;
  ownWrites: OwnWrites;
  watched?: WatchedObjects;
}

const isOurContext = <Config>(context: object): context is FunctionContext<Config> =>
  'kubeConfig' in context && 'send' in context;

/** faas-js-runtime brings its own cloudevents (8): re-made as ours so handlers see one class. */
function asOurEvent(event: unknown): CloudEvent<unknown> {
  if (event instanceof CloudEvent) return event;
  if (typeof event !== 'object' || event === null)
    throw new FuncHttpError(400, 'NotACloudEvent', 'The request did not carry a CloudEvent');
  try {
    return new CloudEvent<unknown>({ ...(event as Record<string, unknown>) } as never, false);
  } catch (error) {
    throw new FuncHttpError(400, 'NotACloudEvent', describeError(error).message);
  }
}

export function funcHandle<Config>(definition: FunctionDefinition<Config>): FuncHandle {
  let scope: Promise<ProcessScope<Config>> | undefined;
  // Once per process: the env and kubeconfig do not change while it runs.
  const processScope = () =>
    (scope ??= (async () => {
      const kubeConfig = loadDefaultKubeConfig();
      const log = createLogger().child({ function: definition.name });
      const serverEnv = parseEnv(serverEnvSchema, process.env, `the ${definition.name} function`);
      const config = parseEnv(definition.configSchema, process.env, definition.name);
      const watchSources = definition.watches?.(config) ?? [];
      return {
        kubeConfig,
        config,
        sink: { url: serverEnv.K_SINK ?? serverEnv.BROKER_URL, tokenFile: serverEnv.SINK_TOKEN_FILE },
        log,
        queue: new ObjectQueue(),
        ownWrites: new OwnWrites(),
        // For as long as the process runs: func's runtime has no close hook.
        ...(watchSources.length > 0 ? { watched: new WatchedObjects(kubeConfig, watchSources, log) } : {}),
      };
    })());

  return async (context, rawEvent) => {
    if (isOurContext<Config>(context)) {
      const routing = routeEvent(definition, rawEvent as CloudEvent<unknown>);
      if ('problem' in routing) throw invalid(routing.problem.reason, routing.problem.message);
      return routing.routed.run(context);
    }
    const event = asOurEvent(rawEvent);
    const routing = routeEvent(definition, event);
    if ('problem' in routing) throw new FuncHttpError(400, routing.problem.reason, routing.problem.message);
    const { kubeConfig, config, sink, log: processLog, queue, ownWrites, watched } = await processScope();
    const log = processLog.child({ ...eventLogFields(event) });
    const traceparent = typeof event['traceparent'] === 'string' ? event['traceparent'] : undefined;
    const ours: FunctionContext<Config> = {
      functionName: definition.name,
      log,
      kubeConfig,
      config,
      send: async (sent) => {
        await postToSink(definition.name, sink, sent);
      },
      ...(traceparent ? { traceparent } : {}),
      queue,
      ownWrites,
      ...(watched ? { watched } : {}),
    };
    try {
      return await routing.routed.run(ours);
    } catch (error) {
      // As the function server does (invoke.ts): nothing written, one log line, no retry.
      if (namespaceRefused(error, log)) return undefined;
      const status = httpStatusFor(error);
      const described = describeError(error);
      if (status >= 500) log.error('handler failed', { ...described, stack: (error as Error)?.stack });
      throw new FuncHttpError(status, described.reason, described.message);
    }
  };
}
