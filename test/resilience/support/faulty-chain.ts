/**
 * The four functions behind their real HTTP servers, with the broker's part played by a driver
 * that can misbehave on purpose: drop an event once, deliver it twice, deliver late, and retry
 * 5xx answers the way the broker does. The ApiServerSource is played as in
 * test/integration/functions/support/chain-harness.ts (whose ChainHarness runs the servers): the
 * live Job is posted as its update event. The KUD Jobs run on the run's node and end by the real
 * Job controller: their image's installer (kud-waits, test/fixtures/node/kud-installers) exits 0
 * when finishJob releases it. Nothing writes a Job's status but the Job controller.
 */
import { kubeconfigPublisherName } from '../../../shared/core/lifecycle-names.js';
import { BatchV1Api, CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { CloudEvent } from 'cloudevents';
import { definition as hostLookup } from '../../../functions/host-lookup/index.js';
import { definition as inventoryRender } from '../../../functions/inventory-render/index.js';
import { definition as kudJobLaunch } from '../../../functions/kud-job-launch/index.js';
import { definition as softwareInstall } from '../../../functions/software-install/index.js';
import type { Env } from '../../../shared/config.js';
import type { Logger } from '../../../shared/log.js';
import type { FunctionDefinition } from '../../../shared/server/types.js';
import { createKudSshKeySecret, kudTestImage, releaseKudJob, waitForJobEnd } from '../../support/node.js';
import { isStatus } from '../../../local/control-plane/index.js';
import {
  ChainHarness,
  jobUpdateEvent,
  pingEvent,
  type Delivery,
} from '../../integration/functions/support/chain-harness.js';
import { bpaGroup } from '../../integration/functions/support/fixtures.js';
import { routesFor } from '../../integration/functions/support/chain-harness.js';

/** What the driver does with one delivery: pass it, lose it, or pass it and send it again later. */
export type Fault = 'pass' | 'drop' | 'duplicate-late';

/** The name of an event in the chain, for choosing faults: its type, or `<verb> <Kind>` for source events. */
export function stepName(event: CloudEvent<unknown>): string {
  const kind = (event as unknown as { kind?: string }).kind;
  if (event.type.startsWith('dev.knative.apiserver.resource.'))
    return `${event.type.slice('dev.knative.apiserver.resource.'.length)} ${kind ?? '?'}`;
  return event.type.replace(/^org\.akraino\.icn\.bpa\./, '');
}

export interface FaultyChainOptions {
  kubeConfig: KubeConfig;
  /** Functions' kubeconfig (e.g. through a fault proxy). Default: `kubeConfig`. */
  functionKubeConfig?: KubeConfig;
  env: Env;
  /** Retries of a 5xx answer, as the broker's delivery spec (default 10). */
  retries?: number;
  retryDelayMs?: number;
  /** The functions' logger (default: silent), e.g. to search every log line for secrets. */
  log?: Logger;
}

export class FaultyChain {
  readonly harness: ChainHarness;
  /** Deliveries held back by `duplicate-late`, sent by flushLate(). */
  private late: CloudEvent<unknown>[] = [];
  /** Delivery answers >= 500 seen (and retried). */
  serverErrors = 0;
  /** The functions' env: KUD_IMAGE is the test image that waits for finishJob unless the test names one; installs in Jobs on the node. */
  private readonly env: Env;
  /** Namespaces whose KUD SSH key Secret is known to exist. */
  private readonly withSecret = new Set<string>();
  constructor(private readonly options: FaultyChainOptions) {
    // Sweeps driven one ping at a time, as in ChainHarness: every ping sweeps. Installs run in
    // their Jobs on the node, whose ends the harness waits for (ChainHarness), so the lab's SSH
    // hosts are on the node's lab network (test/support/node-lab-hosts.ts).
    this.env = {
      KUD_IMAGE: kudTestImage.waits,
      SWEEP_INTERVAL_SECONDS: '0',
      ...options.env,
    };
    this.harness = new ChainHarness(options.functionKubeConfig ?? options.kubeConfig, this.env, {
      sourceKubeConfig: options.kubeConfig,
      ...(options.log ? { log: options.log } : {}),
    });
  }

  async start() {
    await this.harness.start([
      hostLookup,
      inventoryRender,
      kudJobLaunch,
      softwareInstall,
    ] as FunctionDefinition<unknown>[]);
  }
  stop() {
    return this.harness.stop();
  }

  /**
   * The functions' namespace (FUNCTIONS_NAMESPACE): the KUD Jobs run there and mount what is
   * written there (contract section 12); pass it to finishJob and derivedObjects.
   */
  get functionsNamespace(): string {
    return this.harness.functionsNamespace;
  }

  /** One delivery with the broker's retries of 5xx (linear delay). */
  async deliver(target: string, event: CloudEvent<unknown>): Promise<Delivery> {
    const retries = this.options.retries ?? 10;
    for (let attempt = 0; ; attempt++) {
      let delivery: Delivery;
      try {
        delivery = await this.harness.deliver(target, event);
      } catch (error) {
        if (attempt >= retries) throw error;
        this.serverErrors++;
        await new Promise((r) => setTimeout(r, this.options.retryDelayMs ?? 300));
        continue;
      }
      if (delivery.status < 500 || attempt >= retries) return delivery;
      this.serverErrors++;
      await new Promise((r) => setTimeout(r, this.options.retryDelayMs ?? 300));
    }
  }

  /**
   * Delivers the event and every reply, breadth first, asking `fault` what to do with each
   * (event, target) pair. Returns the deliveries made.
   */
  async publish(
    event: CloudEvent<unknown>,
    fault: (event: CloudEvent<unknown>, target: string) => Fault = () => 'pass',
  ): Promise<Delivery[]> {
    const made: Delivery[] = [];
    const queue = [event];
    while (queue.length > 0) {
      const next = queue.shift() as CloudEvent<unknown>;
      for (const target of routesFor(next)) {
        const what = fault(next, target);
        if (what === 'drop') continue;
        if (what === 'duplicate-late') this.late.unshift(next);
        const delivery = await this.deliver(target, next);
        made.push(delivery);
        if (delivery.reply) queue.push(delivery.reply);
        // The Software updates of the install Jobs the delivery waited for (ChainHarness).
        queue.push(...this.harness.takeFollowed());
      }
    }
    return made;
  }

  /** Sends the held-back duplicates, newest first (so they also arrive out of order). */
  async flushLate(): Promise<Delivery[]> {
    const late = this.late.splice(0, this.late.length);
    const made: Delivery[] = [];
    for (const event of late) made.push(...(await this.publish(event)));
    return made;
  }

  /** One ping to every function, then whatever the sweeps sent, delivered. */
  async sweep(): Promise<Delivery[]> {
    const made = await this.publish(pingEvent());
    const sent = this.harness.collector.drain();
    for (const event of sent) made.push(...(await this.publish(event)));
    return made;
  }

  /**
   * When the Job exists in `namespace` (where it runs: the functions' namespace for a KUD Job) and
   * is not finished: lets its installer exit 0, waits for the real Job controller to complete it,
   * then plays the Job source (the live Job as an update event).
   */
  async finishJob(
    namespace: string,
    jobName: string,
    fault?: (event: CloudEvent<unknown>, target: string) => Fault,
  ): Promise<Delivery[]> {
    const { kubeConfig } = this.options;
    const batch = kubeConfig.makeApiClient(BatchV1Api);
    const job = await batch.readNamespacedJob({ name: jobName, namespace }).catch(() => undefined);
    if (!job) return [];
    const finished = (job.status?.conditions ?? []).some((c) => c.type === 'Complete' && c.status === 'True');
    if (finished) return [];
    await this.ensureKudSshKeySecret(namespace);
    await releaseKudJob(namespace, job.metadata?.labels?.cluster ?? '', 0);
    const ended = await waitForJobEnd(kubeConfig, namespace, jobName);
    if (ended.ended.type !== 'Complete')
      throw new Error(
        `Job ${namespace}/${jobName} ended ${ended.ended.type} (${ended.ended.reason}), not Complete`,
      );
    return this.publish(await jobUpdateEvent(kubeConfig, namespace, jobName), fault);
  }

  /** The Secret the KUD Job mounts, unless the test made one (the test image reads none). */
  private async ensureKudSshKeySecret(namespace: string): Promise<void> {
    if (this.withSecret.has(namespace)) return;
    await createKudSshKeySecret(this.options.kubeConfig, namespace).catch((error: unknown) => {
      if (!isStatus(error, 409)) throw error;
    });
    this.withSecret.add(namespace);
  }
}

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  observedGeneration?: number;
}

export async function conditionsOf(
  kubeConfig: KubeConfig,
  plural: 'provisionings' | 'softwares',
  namespace: string,
  name: string,
): Promise<Condition[]> {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const object = (await api.getNamespacedCustomObject({ ...bpaGroup, plural, namespace, name })) as {
    status?: { conditions?: Condition[] };
  };
  return object.status?.conditions ?? [];
}

export const isTrue = (conditions: Condition[], type: string) =>
  conditions.some((c) => c.type === type && c.status === 'True');

/**
 * What exists for a cluster: Jobs, and the inventory and IP ConfigMaps (must each be one) of the
 * Provisioning's `namespace`. With `functionsNamespace` (contract section 12: the KUD Job runs
 * there and mounts the inventory written there), `jobs` are those of both namespaces and
 * `mounted` the ConfigMaps of the functions' namespace.
 */
export async function derivedObjects(
  kubeConfig: KubeConfig,
  namespace: string,
  cluster: string,
  functionsNamespace?: string,
): Promise<{
  jobs: (string | undefined)[];
  configMaps: (string | undefined)[];
  mounted?: (string | undefined)[];
}> {
  const batch = kubeConfig.makeApiClient(BatchV1Api);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const labelSelector = `cluster=${cluster}`;
  const jobsIn = async (at: string) =>
    (await batch.listNamespacedJob({ namespace: at, labelSelector })).items
      .map((j) => j.metadata?.name)
      // The KUD Jobs: the kubeconfig publisher that follows a successful one (one fixed name, so
      // never twice) is not counted.
      .filter((job) => job !== kubeconfigPublisherName(cluster));
  const configMapsIn = async (at: string) =>
    (await core.listNamespacedConfigMap({ namespace: at, labelSelector })).items
      .map((c) => c.metadata?.name)
      .sort();
  const jobs = await jobsIn(namespace);
  const configMaps = await configMapsIn(namespace);
  if (functionsNamespace === undefined) return { jobs, configMaps };
  return {
    jobs: [...jobs, ...(await jobsIn(functionsNamespace))],
    configMaps,
    mounted: await configMapsIn(functionsNamespace),
  };
}

/** A chain run by the resilience tests is done when its Provisioning is Ready and its `<name>-tools` Software Installed. */
export async function chainDone(kubeConfig: KubeConfig, namespace: string, name: string): Promise<boolean> {
  return (
    isTrue(await conditionsOf(kubeConfig, 'provisionings', namespace, name), 'Ready') &&
    isTrue(await conditionsOf(kubeConfig, 'softwares', namespace, `${name}-tools`), 'Installed')
  );
}
