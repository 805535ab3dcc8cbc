import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import type { Env } from '../../shared/config.js';
import { BpaError } from '../../shared/errors.js';
import type { LogLevel } from '../../shared/log.js';
import { startBroker, type DeliveryRecord, type KReference, type RunningBroker } from '../broker/index.js';
import { repoRoot } from '../control-plane/repo-root.js';
import { startLiveView, type LiveView } from '../live-view/server.js';
import { connectApi, ensureNamespace, type StackApi } from './api.js';
import { listenOnFirstFree } from '../control-plane/free-port.js';
import { functionNames, isFunctionName, type FunctionName } from './function-names.js';
import { startFunctions, type RunningFunction } from './functions.js';
import { openLogFile, type LogFile } from './log-file.js';
import { serviceAccountKubeConfigs } from './service-accounts.js';
import { objectsOfKind } from '../knative-objects.js';
import { loadKustomization } from './manifest-objects.js';
import { startLocalSources, type LocalSources } from './sources.js';

/** The namespace of the manifests' Broker, Triggers and sources. */
export const stackNamespace = 'bpa-system';
/** The Broker the manifests define. */
export const stackBrokerName = 'default';
/** Name of the Trigger the stack adds so the live view sees every event's attributes and data. */
export const liveViewTriggerName = 'bpa-live-view';

export interface StackOptions {
  /** A cluster's kubeconfig; absent: a fresh embedded control plane. */
  kubeconfig?: string;
  /** Where the embedded control plane's kubeconfig is written (default: a temp file). */
  kubeconfigOut?: string;
  /** Broker port, or the first free one from it. Default 8080. */
  port?: number;
  /** DHCP lease file for host-lookup (LEASES_SOURCE). */
  leases?: string;
  /** Emit `add` events for objects that exist when the sources start. */
  replay?: boolean;
  /** Bind address of every server. Default 127.0.0.1. */
  host?: string;
  /** Human progress lines (start-up, dead letters). */
  log: (line: string) => void;
  /** Every delivery attempt the broker makes (the stack's own live-view Trigger excluded). */
  onDelivery?: (record: DeliveryRecord) => void;
  /** Every event the manifests' dead-letter sink receives, with its knativeerror* extensions. */
  onDeadLetter?: (event: { attributes: Record<string, unknown>; data?: unknown }) => void;
  /** Extra env for every function, and per function (e.g. SSH_PORT for the demo lab). */
  functionsEnv?: Env;
  functionEnvFor?: Partial<Record<FunctionName, Env>>;
  /** JSON log file of functions, broker and sources. Default `.bpa/logs/stack-<time>.log`. */
  logFile?: string;
  logLevel?: LogLevel;
  /** PingSource interval override in ms (the manifests' schedule is once a minute). */
  pingIntervalMs?: number;
  /** A function's own Kubernetes client (the scale bench's counting one); default: the stack's. */
  functionKubeConfig?: (name: FunctionName) => KubeConfig | undefined;
  /**
   * Functions already running elsewhere (their URL): not started, the broker delivers to them
   * (the scale bench runs host-lookup in a process of its own to measure its memory).
   */
  externalFunctions?: Partial<Record<FunctionName, string>>;
  /** The kustomize directory read for Broker, Trigger and source objects. Default `<repo>/manifests`. */
  manifestsDir?: string;
  /**
   * Brokers, Triggers and sources added to the manifests' (a test's recorder Trigger), as
   * startKnativeStack's `extraObjects` are on the real engine. Their namespace defaults to bpa-system.
   */
  extraObjects?: KubernetesObject[];
  /**
   * Run each function as its ServiceAccount of the manifests (applied with their RBAC, rendered
   * with these bpa-config values) instead of the stack's own credentials: the rights a function
   * has on a cluster (local/stack/service-accounts.ts). Default: the stack's credentials.
   */
  serviceAccounts?: { config: Record<string, string> };
}

export interface Stack {
  api: StackApi;
  kubeConfig: KubeConfig;
  kubeconfigPath: string;
  brokerUrl: string;
  /** Ingress of the manifests' Broker: `http://host:port/bpa-system/default`. */
  ingressUrl: string;
  functions: { name: FunctionName; url: string }[];
  liveView: LiveView;
  liveViewUrl: string;
  logFilePath: string;
  broker: RunningBroker;
  /** Sends the PingSource's event now (re-drives anything not Ready). */
  sweep(): Promise<void>;
  /** Stops everything in reverse order; idempotent. */
  stop(): Promise<void>;
}

/** Kept after stop (under the git-ignored .bpa/), so a run can be read afterwards. */
function defaultLogFile(): string {
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  return join(repoRoot(), '.bpa', 'logs', `stack-${stamp}.log`);
}

/**
 * Starts the embedded stack: the API (given or embedded), the live view, the four functions,
 * the broker built from the manifests' Broker and Triggers, and the local ApiServerSources and
 * PingSource built from the manifests' source objects.
 */
export async function startStack(options: StackOptions): Promise<Stack> {
  const host = options.host ?? '127.0.0.1';
  const say = options.log;
  const manifestsDir = options.manifestsDir ?? join(repoRoot(), 'manifests');
  const objects = [
    ...loadKustomization(manifestsDir),
    ...(options.extraObjects ?? []).map((o) => ({
      ...o,
      metadata: { namespace: stackNamespace, ...o.metadata },
    })),
  ];
  const logFile: LogFile = openLogFile(options.logFile ?? defaultLogFile(), options.logLevel);
  const log = logFile.logger('stack');
  const cleanups: (() => Promise<void> | void)[] = [() => logFile.close()];
  const runCleanups = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) {
      try {
        await cleanup();
      } catch (error) {
        log.warn('stop step failed', { error: String(error) });
      }
    }
  };

  try {
    const api = await connectApi({
      ...(options.kubeconfig ? { kubeconfig: options.kubeconfig } : {}),
      ...(options.kubeconfigOut ? { kubeconfigOut: options.kubeconfigOut } : {}),
      log: say,
    });
    cleanups.push(() => api.stop());
    await ensureNamespace(api.kubeConfig, stackNamespace);

    // The broker's port is bound now, before the functions that post to it start: it answers
    // 503 until the broker takes the server over.
    const brokerServer = createServer((_request, response) => {
      response.writeHead(503, { 'content-type': 'text/plain' });
      response.end('the broker is starting\n');
    });
    const brokerPort = await listenOnFirstFree(brokerServer, host, options.port ?? 8080);
    let brokerStarted = false;
    cleanups.push(() => {
      if (!brokerStarted) brokerServer.close();
    });
    const ingressUrl = `http://${host}:${brokerPort}/${stackNamespace}/${stackBrokerName}`;

    const liveView = await startLiveView({
      host,
      port: brokerPort + 1,
      portSpan: 100,
      kubeConfig: api.kubeConfig,
      recordReceived: false,
      log: logFile.logger('live-view'),
      onDeadLetter: (event) => {
        say(
          `dead letter  ${event.type}  ${event.subject ?? '-'}  ` +
            `(${String(event.attributes.knativeerrorcode ?? '?')} from ${String(event.attributes.knativeerrordest ?? '?')})`,
        );
        options.onDeadLetter?.(event);
      },
    });
    cleanups.push(() => liveView.stop());

    // Temporary files the functions need (none yet besides what callers pass) live here.
    const tempDir = mkdtempSync(join(tmpdir(), 'bpa-stack-'));
    cleanups.push(() => rmSync(tempDir, { recursive: true, force: true }));

    const env: Env = {
      ...process.env,
      LOG_LEVEL: options.logLevel ?? process.env.LOG_LEVEL ?? 'info',
      BROKER_URL: ingressUrl,
      ...(options.leases ? { LEASES_SOURCE: resolve(options.leases) } : {}),
      ...options.functionsEnv,
    };
    // The functions get their Kubernetes access injected; a KUBECONFIG in env must not matter.
    delete env.KUBECONFIG;
    const ownKubeConfigs = options.serviceAccounts
      ? await serviceAccountKubeConfigs({
          kubeConfig: api.kubeConfig,
          manifestsDir,
          // BMH_NAMESPACE places host-lookup's BareMetalHost Role: follow the functions' env.
          config: {
            ...(env.BMH_NAMESPACE ? { BMH_NAMESPACE: env.BMH_NAMESPACE } : {}),
            ...options.serviceAccounts.config,
          },
          serviceAccounts: functionNames,
        })
      : undefined;
    const functions: RunningFunction[] = await startFunctions({
      host,
      kubeConfig: api.kubeConfig,
      sinkUrl: ingressUrl,
      env,
      ...(options.functionEnvFor ? { envFor: options.functionEnvFor } : {}),
      logger: (name) => logFile.logger(name),
      ...(options.functionKubeConfig || ownKubeConfigs
        ? {
            kubeConfigFor: (name: FunctionName) =>
              options.functionKubeConfig?.(name) ?? ownKubeConfigs?.get(name),
          }
        : {}),
      skip: Object.keys(options.externalFunctions ?? {}) as FunctionName[],
    });
    cleanups.push(() => Promise.all(functions.map((f) => f.server.close())).then(() => undefined));
    const functionUrl = new Map<string, string>([
      ...functions.map((f): [string, string] => [f.name, f.url]),
      ...(Object.entries(options.externalFunctions ?? {}) as [string, string][]),
    ]);

    const resolveRef = (ref: KReference & { namespace: string }): string => {
      if (ref.kind === 'Service' && ref.apiVersion.startsWith('serving.knative.dev/')) {
        if (isFunctionName(ref.name)) return functionUrl.get(ref.name)!;
        if (ref.name === 'dead-letter') return liveView.deadLetterUrl;
      }
      if (ref.kind === 'Broker' && ref.apiVersion.startsWith('eventing.knative.dev/'))
        return `http://${host}:${brokerPort}/${ref.namespace}/${ref.name}`;
      throw new BpaError(
        'UnresolvableReference',
        `no local equivalent of ${ref.kind} ${ref.namespace}/${ref.name} (${ref.apiVersion})`,
        'invalid',
      );
    };

    const liveViewTrigger: KubernetesObject = {
      apiVersion: 'eventing.knative.dev/v1',
      kind: 'Trigger',
      metadata: { name: liveViewTriggerName, namespace: stackNamespace },
      // Every event that enters the broker also shows as one `broker` row, even with no other subscriber.
      spec: { broker: stackBrokerName, subscriber: { uri: `${liveView.cloudEventsUrl}?trigger=broker` } },
    } as KubernetesObject;
    const broker = await startBroker({
      server: brokerServer,
      objects: [
        ...objectsOfKind(objects, 'eventing.knative.dev', 'Broker'),
        ...objectsOfKind(objects, 'eventing.knative.dev', 'Trigger'),
        liveViewTrigger,
      ],
      resolveRef,
      defaultNamespace: stackNamespace,
      log: logFile.logger('broker'),
      onDelivery: (record) => {
        log.info('delivery', { ...record });
        if (record.trigger === liveViewTriggerName) return;
        liveView.hub.recordEvent({
          id: record.eventId,
          type: record.eventType,
          ...(record.subject ? { subject: record.subject } : {}),
          trigger: record.trigger,
          subscriber: record.target,
          status: record.status ?? 'no answer',
          latencyMs: record.latencyMs,
          attempt: record.attempt,
          outcome: record.outcome,
          ...(record.reason ? { reason: record.reason } : {}),
        });
        options.onDelivery?.(record);
      },
    });
    brokerStarted = true;
    cleanups.push(() => broker.close());

    const sources: LocalSources = await startLocalSources({
      objects,
      kubeConfig: api.kubeConfig,
      resolveRef,
      replay: options.replay ?? false,
      defaultNamespace: stackNamespace,
      ...(options.pingIntervalMs ? { pingIntervalMs: options.pingIntervalMs } : {}),
      logger: (name: string) => logFile.logger(name),
      onEmit: (emission) => {
        if (!emission.result.ok)
          say(`source event not accepted by the broker: ${emission.source} → ${emission.sink}`);
      },
    });
    cleanups.push(() => sources.stop());
    await liveView.ready;

    let stopping: Promise<void> | undefined;
    return {
      api,
      kubeConfig: api.kubeConfig,
      kubeconfigPath: api.kubeconfigPath,
      brokerUrl: broker.url,
      ingressUrl,
      functions: functions.map(({ name, url }) => ({ name, url })),
      liveView,
      liveViewUrl: liveView.url,
      logFilePath: logFile.path,
      broker,
      sweep: () => sources.ping(),
      stop: () => (stopping ??= runCleanups()),
    };
  } catch (error) {
    await runCleanups();
    throw error;
  }
}
