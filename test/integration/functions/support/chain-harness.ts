/**
 * Runs the functions through their real HTTP servers (127.0.0.1, ephemeral ports) and plays
 * the broker's part in the simplest way: POST an event to every function whose Trigger in
 * manifests/ accepts it (trigger-routes.ts: the Triggers' own filters, run by the embedded
 * broker's filter code), then POST each reply on, until no reply is left. Also plays the
 * ApiServerSource (events built from live objects). Jobs are run by the real Job controller on
 * the run's node (test/support/node.ts); nothing here writes a Job's status.
 *
 * Install Jobs (contract section 11): software-install answers a Software by creating its install
 * Job and holds no request open; the Job's pod on the node does the SSH work and records the
 * outcome on the Software's status, whose update the ApiServerSource then delivers. The harness
 * plays that source for the Jobs its own deliveries started: after a delivery to software-install
 * it waits until each new install Job of the event's namespaces ends, then delivers the
 * Software's update (and publish() goes on with what that answers, software.installed or
 * software.failed). The SSH hosts must be ones the node's pods reach: test/support/node-lab-hosts.ts.
 *
 * Function-level: a suite here sees every reply of every step. The chain suites that drive
 * everything through the API server, on the embedded broker and on real Knative Eventing, are
 * test/integration/chain/ (test/support/chain-engine.ts).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BatchV1Api, CustomObjectsApi, Watch, type KubeConfig, type V1Job } from '@kubernetes/client-node';
import { CloudEvent } from 'cloudevents';
import { parseHttpEvent } from '../../../../shared/cloudevents/message.js';
import { postEvent } from '../../../../shared/cloudevents/sink-client.js';
import type { Env } from '../../../../shared/config.js';
import { SourceEventTypes } from '../../../../shared/events/types.js';
import { createLogger, silentLogger, type LogLevel, type Logger } from '../../../../shared/log.js';
import {
  createNamespace,
  deleteNamespace,
  uniqueNamespaceName,
} from '../../../../local/control-plane/index.js';
import { pendingInstallJob } from '../../../../functions/software-install/install-job-state.js';
import { functionName as softwareInstallName } from '../../../../functions/software-install/name.js';
import type { StoredObject } from '../../../../shared/k8s/stored-object.js';
import {
  startFunctionServer,
  type RunningFunctionServer,
} from '../../../../shared/server/function-server.js';
import type { FunctionDefinition } from '../../../../shared/server/types.js';
import { routesFor } from './trigger-routes.js';
import { nodeImageEnv } from '../../../support/node.js';

export interface Delivery {
  target: string;
  event: CloudEvent<unknown>;
  status: number;
  reply?: CloudEvent<unknown>;
  body: string;
}

/** Collects what functions send with context.send() (the sweep), as a broker ingress would. */
export class EventCollector {
  readonly events: CloudEvent<unknown>[] = [];
  private server?: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const parsed = parseHttpEvent(request.headers as Record<string, string>, Buffer.concat(chunks));
        if (parsed.ok) this.events.push(parsed.event);
        response.writeHead(parsed.ok ? 202 : 400).end();
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/ns/default`;
  }

  /** Takes (and forgets) what was collected so far. */
  drain(): CloudEvent<unknown>[] {
    return this.events.splice(0, this.events.length);
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** Which functions the Triggers of manifests/ send an event to (see trigger-routes.ts). */
export { routesFor };

/**
 * The functions' logs: dropped, unless BPA_TEST_LOG names a level (debug, info, warn, error);
 * then each line goes to stderr with its function's name, to see why a step answered as it did.
 */
function harnessLogger(functionName: string) {
  const level = process.env.BPA_TEST_LOG as LogLevel | undefined;
  if (!level) return silentLogger;
  return createLogger({
    level,
    base: { function: functionName },
    sink: (line) => process.stderr.write(line + '\n'),
  });
}

/** Where a delivery may start install Jobs (ChainHarness.scopeOf). */
type InstallScope = { software: { namespace: string; name: string } } | { namespaces: string[] };

const softwaresResource = { group: 'bpa.akraino.org', version: 'v1alpha1', plural: 'softwares' };

/** How long an install Job may take to end: a pod's start and its hosts' SSH timeouts. */
const installJobWaitMs = 240_000;

export class ChainHarness {
  readonly servers = new Map<string, RunningFunctionServer>();
  readonly collector = new EventCollector();
  /** Every delivery made, in order. */
  readonly deliveries: Delivery[] = [];

  constructor(
    private readonly kubeConfig: KubeConfig,
    env: Env = {},
    private readonly options: {
      /**
       * false: deliveries to software-install do not wait for the install Jobs they start (a
       * suite that looks at a Job while it runs, or whose hosts no pod reaches). Default true.
       */
      followInstallJobs?: boolean;
      /**
       * Where the played source reads Softwares and Jobs (the API server itself), when the
       * functions' kubeconfig goes through a fault proxy, a restricted account or a recorder
       * (whose calls must be the function's alone). Default: theirs.
       */
      sourceKubeConfig?: KubeConfig;
      /** The functions' logger, for all of them (default: BPA_TEST_LOG's, else silent). */
      log?: Logger;
    } = {},
  ) {
    // The suites drive sweeps one ping at a time: every ping sweeps (SWEEP_INTERVAL_SECONDS=0);
    // the one-sweep-per-interval rule has its own tests (test/resilience/hostile-tenant-rbac.test.ts).
    // The node's images first: the Jobs the functions create must name images it holds. One
    // attempt per host: a host that fails on purpose fails at once (suites that test the
    // retries ask for more).
    this.env = { ...nodeImageEnv(), INSTALL_ATTEMPTS: '1', SWEEP_INTERVAL_SECONDS: '0', ...env };
  }
  private env: Env;

  /** The functions' own namespace (cluster-name claims, kud-installer) when the env names none. */
  private ownNamespace?: string;

  /**
   * The functions' namespace (FUNCTIONS_NAMESPACE: the env's, else the harness's own, made by
   * start()): the KUD, cleanup and publisher Jobs run there and mount what is written there
   * (contract section 12), among it the operator's SSH key Secret a suite creates.
   */
  get functionsNamespace(): string {
    const namespace = this.env.FUNCTIONS_NAMESPACE;
    if (!namespace) throw new Error('ChainHarness.functionsNamespace: read it after start()');
    return namespace;
  }

  async start<C extends unknown[]>(definitions: { [K in keyof C]: FunctionDefinition<C[K]> }): Promise<void> {
    await this.collector.start();
    if (!this.env.FUNCTIONS_NAMESPACE) {
      // One per harness, so cluster names of one test file never claim those of another.
      this.ownNamespace = await createNamespace(this.kubeConfig, uniqueNamespaceName('bpa-functions'));
      this.env = { ...this.env, FUNCTIONS_NAMESPACE: this.ownNamespace };
    }
    for (const definition of definitions as FunctionDefinition<unknown>[]) {
      const server = await startFunctionServer({
        definition,
        host: '127.0.0.1',
        port: 0,
        kubeConfig: this.kubeConfig,
        env: this.env,
        sink: this.collector.url,
        log: this.options.log ?? harnessLogger(definition.name),
        tracing: false,
        processMetrics: false,
      });
      this.servers.set(definition.name, server);
    }
  }

  async stop(): Promise<void> {
    for (const server of this.servers.values()) await server.close();
    await this.collector.stop();
    if (this.ownNamespace) await deleteNamespace(this.kubeConfig, this.ownNamespace);
  }

  url(name: string): string {
    const server = this.servers.get(name);
    if (!server) throw new Error(`function ${name} is not started`);
    return server.url;
  }

  /** One POST to one function. */
  async deliver(target: string, event: CloudEvent<unknown>): Promise<Delivery> {
    const follow = target === softwareInstallName && this.options.followInstallJobs !== false;
    // Jobs pending before the delivery are not its own (another test's, or one that never ends).
    const before = follow ? await this.pendingInstallJobs(this.scopeOf(event)) : [];
    const delivery = await this.post(target, event);
    if (follow)
      this.followed.push(...(await this.followInstallJobs(event, new Set(before.map((p) => p.key)))));
    return delivery;
  }

  /**
   * The Software updates owed for install Jobs that deliveries waited for, taken (and forgotten):
   * a driver of its own (test/resilience/support/faulty-chain.ts) publishes them as publish() does.
   */
  takeFollowed(): CloudEvent<unknown>[] {
    return this.followed.splice(0);
  }

  private async post(target: string, event: CloudEvent<unknown>): Promise<Delivery> {
    const response = await postEvent(this.url(target), event, { timeoutMs: 120_000 });
    const delivery: Delivery = {
      target,
      event,
      status: response.status,
      body: response.body.toString('utf8'),
      ...(response.replyEvent ? { reply: response.replyEvent } : {}),
    };
    this.deliveries.push(delivery);
    return delivery;
  }

  /**
   * Delivers the event to every started function whose Trigger takes it, then each reply the
   * same way, breadth first, until nothing is left. Returns every delivery made.
   */
  async publish(event: CloudEvent<unknown>): Promise<Delivery[]> {
    const made: Delivery[] = [];
    const queue = [event];
    while (queue.length > 0) {
      const next = queue.shift() as CloudEvent<unknown>;
      for (const target of routesFor(next).filter((name) => this.servers.has(name))) {
        const delivery = await this.deliver(target, next);
        made.push(delivery);
        if (delivery.reply) queue.push(delivery.reply);
        // The Software updates the install Jobs' outcomes cause, as the ApiServerSource sends them.
        queue.push(...this.takeFollowed());
      }
    }
    return made;
  }

  /** Software updates owed for install Jobs that ended (deliver() fills it, publish() sends them). */
  private readonly followed: CloudEvent<unknown>[] = [];
  /** Install Jobs already followed, `namespace/name`: each is waited for once. */
  private readonly seenJobs = new Set<string>();

  /**
   * After a delivery to software-install: every Software of the event's namespaces with an
   * install Job pending that was not pending before the delivery and that this harness has not
   * followed yet; waits until the Job ends (its pod records the outcome first) and returns each
   * Software's update event, read after that.
   */
  private async followInstallJobs(
    event: CloudEvent<unknown>,
    preexisting: ReadonlySet<string>,
  ): Promise<CloudEvent<unknown>[]> {
    const updates: CloudEvent<unknown>[] = [];
    for (const { key, namespace, job, software } of await this.pendingInstallJobs(this.scopeOf(event))) {
      if (preexisting.has(key) || this.seenJobs.has(key)) continue;
      this.seenJobs.add(key);
      if (!(await this.jobEnded(namespace, job))) continue;
      const live = await this.custom
        .getNamespacedCustomObject({ ...softwaresResource, namespace, name: software })
        .catch(() => undefined);
      if (live) updates.push(sourceEvent('update', JSON.parse(JSON.stringify(live)) as never));
    }
    return updates;
  }

  /**
   * The Softwares a delivery may start install Jobs for: the one a Software's own event names
   * (one read, where a list of its namespace read all of them, 200 in the load test, twice per
   * delivery), else every Software of the event's namespaces (cluster.ready, the sweep's ping).
   */
  private scopeOf(event: CloudEvent<unknown>): InstallScope {
    const data = event.data as
      { kind?: unknown; metadata?: { name?: unknown; namespace?: unknown } } | undefined;
    const name = data?.metadata?.name;
    const namespace = data?.metadata?.namespace;
    if (data?.kind === 'Software' && typeof name === 'string' && typeof namespace === 'string' && namespace)
      return { software: { namespace, name } };
    return { namespaces: this.namespacesOf(event) };
  }

  /** The install Jobs the Softwares in scope wait for (Installed=Unknown, Installing). */
  private async pendingInstallJobs(scope: InstallScope) {
    const pending: { key: string; namespace: string; job: string; software: string }[] = [];
    const softwaresOf = async (namespace: string): Promise<StoredObject[]> => {
      if ('namespaces' in scope)
        return (
          (await this.custom.listNamespacedCustomObject({ ...softwaresResource, namespace })) as {
            items: StoredObject[];
          }
        ).items;
      const one = await this.custom
        .getNamespacedCustomObject({ ...softwaresResource, namespace, name: scope.software.name })
        .catch((error: unknown) => {
          if ((error as { code?: number }).code === 404) return undefined;
          throw error;
        });
      return one ? [one as StoredObject] : [];
    };
    const namespaces = 'namespaces' in scope ? scope.namespaces : [scope.software.namespace];
    for (const namespace of namespaces) {
      for (const software of await softwaresOf(namespace)) {
        const job = pendingInstallJob(software);
        if (job)
          pending.push({
            key: `${namespace}/${job}`,
            namespace,
            job,
            software: software.metadata.name ?? '',
          });
      }
    }
    return pending;
  }

  /**
   * Waits for the Job's Complete or Failed condition; false when the Job is gone (deleted). Reads
   * the Job, then waits for its next change on a watch (the Job controller's status writes), as
   * the ApiServerSource would: twenty Jobs polled every 200 ms were 100 reads a second.
   */
  private async jobEnded(namespace: string, name: string): Promise<boolean> {
    const batch = this.sourceKubeConfig.makeApiClient(BatchV1Api);
    const deadline = Date.now() + installJobWaitMs;
    let last: V1Job | undefined;
    while (Date.now() < deadline) {
      const job = await batch.readNamespacedJob({ name, namespace }).catch((error: unknown) => {
        if ((error as { code?: number }).code === 404) return null;
        throw error;
      });
      if (job === null) return false;
      last = job;
      const done = job.status?.conditions?.some(
        (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
      );
      if (done) return true;
      await this.nextChangeOfJob(namespace, name, job.metadata?.resourceVersion, deadline);
    }
    throw new Error(
      `install Job ${namespace}/${name} did not end in ${installJobWaitMs} ms; last status ${JSON.stringify(last?.status ?? {})}`,
    );
  }

  /**
   * Resolves on the Job's first change after `resourceVersion`, when the watch ends (the caller
   * reads again), or at the deadline; at most 10 s, so a watch that hangs costs a read, not the wait.
   */
  private async nextChangeOfJob(
    namespace: string,
    name: string,
    resourceVersion: string | undefined,
    deadline: number,
  ): Promise<void> {
    const startedAt = Date.now();
    let failed = false;
    await new Promise<void>((resolve) => {
      let request: AbortController | undefined;
      let over = false;
      const end = (error?: unknown) => {
        if (over) return;
        over = true;
        failed = error !== undefined && error !== null;
        clearTimeout(timer);
        request?.abort();
        resolve();
      };
      const timer = setTimeout(end, Math.max(0, Math.min(10_000, deadline - Date.now())));
      new Watch(this.sourceKubeConfig)
        .watch(
          `/apis/batch/v1/namespaces/${namespace}/jobs`,
          { fieldSelector: `metadata.name=${name}`, ...(resourceVersion ? { resourceVersion } : {}) },
          () => end(),
          (error: unknown) => end(error),
        )
        .then((controller) => (over ? controller.abort() : (request = controller)))
        .catch((error: unknown) => end(error));
    });
    // A watch refused at once (say, a version too old): read again, not in a tight loop.
    if (failed && Date.now() - startedAt < 200) await new Promise((resolve) => setTimeout(resolve, 200));
  }

  /** Where the event's Softwares are: its subject's or data's namespace, else the sweep's namespaces. */
  private namespacesOf(event: CloudEvent<unknown>): string[] {
    const found = new Set<string>();
    const fromSubject = /(?:^|\/)namespaces\/([^/]+)\//.exec(event.subject ?? '')?.[1];
    if (fromSubject) found.add(fromSubject);
    if (typeof event.namespace === 'string' && event.namespace) found.add(event.namespace);
    const data = event.data as { metadata?: { namespace?: unknown }; namespace?: unknown } | undefined;
    for (const value of [data?.metadata?.namespace, data?.namespace])
      if (typeof value === 'string' && value) found.add(value);
    if (found.size === 0)
      for (const namespace of (this.env.SWEEP_NAMESPACES ?? '').split(','))
        if (namespace.trim()) found.add(namespace.trim());
    return [...found];
  }

  private get sourceKubeConfig(): KubeConfig {
    return this.options.sourceKubeConfig ?? this.kubeConfig;
  }

  private get custom() {
    return this.sourceKubeConfig.makeApiClient(CustomObjectsApi);
  }

  /** Every reply of the given type seen so far. */
  replies(type: string): CloudEvent<unknown>[] {
    return this.deliveries.flatMap((d) => (d.reply?.type === type ? [d.reply] : []));
  }
}

/** The types of the replies among deliveries, in order (deliveries answered 204 have none). */
export const replyTypes = (deliveries: readonly Delivery[]): string[] =>
  deliveries.flatMap((d) => (d.reply ? [d.reply.type] : []));

/** What Knative's ApiServerSource (mode Resource) emits for an object. */
export function sourceEvent(
  type: 'add' | 'update',
  object: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } },
): CloudEvent<unknown> {
  const plural = object.kind.toLowerCase().endsWith('s')
    ? `${object.kind.toLowerCase()}es`
    : `${object.kind.toLowerCase()}s`;
  return new CloudEvent<unknown>({
    type: `dev.knative.apiserver.resource.${type}`,
    source: 'https://127.0.0.1:6443',
    subject: `/apis/${object.apiVersion}/namespaces/${object.metadata.namespace}/${plural}/${object.metadata.name}`,
    datacontenttype: 'application/json',
    data: object,
    kind: object.kind,
    name: object.metadata.name,
    namespace: object.metadata.namespace ?? '',
    apiversion: object.apiVersion,
  });
}

export const pingEvent = () =>
  new CloudEvent<unknown>({
    type: SourceEventTypes.ping,
    source: '/apis/v1/namespaces/bpa-system/pingsources/sweep',
    datacontenttype: 'application/json',
    data: { sweep: true },
  });

/** The live Job as an update event (what the Job ApiServerSource sends after a status change). */
export async function jobUpdateEvent(kubeConfig: KubeConfig, namespace: string, name: string) {
  const batch = kubeConfig.makeApiClient(BatchV1Api);
  const job = await batch.readNamespacedJob({ name, namespace });
  // The source sends the object as the API server serialises it (JSON, strings for times).
  const data = JSON.parse(JSON.stringify(job)) as {
    apiVersion?: string;
    kind?: string;
    metadata: { name: string };
  };
  return sourceEvent('update', { ...data, apiVersion: 'batch/v1', kind: 'Job' });
}
