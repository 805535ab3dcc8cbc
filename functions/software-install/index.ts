import type { CloudEvent } from 'cloudevents';
import { invalid } from '../../shared/errors.js';
import {
  EventTypes,
  SourceEventTypes,
  clusterReadyDataSchema,
  kubeObjectSchema,
  type ClusterReadyData,
  type KubeObjectData,
} from '../../shared/events/types.js';
import { provisioningApiVersion } from '../../shared/schemas/provisioning.js';
import { softwareKind } from '../../shared/schemas/software.js';
import { kubeClients, type KubeClients } from '../../shared/k8s/clients.js';
import { softwaresResource } from '../../shared/k8s/resources.js';
import { listCustomObjects } from '../../shared/k8s/custom-objects.js';
import { defineStep } from '../../shared/k8s/define-step.js';
import { sweepOnPing } from '../../shared/k8s/sweep.js';
import { funcHandle } from '../../shared/server/func-adapter.js';
import {
  on,
  type FunctionContext,
  type FunctionDefinition,
  type HandlerResult,
} from '../../shared/server/types.js';
import { softwareInstallConfigSchema, type SoftwareInstallConfig } from './config.js';
import { decideInstall, installSoftware } from './install-software.js';
import { softwareInstallMetrics } from './metrics.js';
import { SoftwareCondition, softwareRef, softwareTarget } from './software-status.js';
import { functionManager, functionName } from './name.js';
import { withRetryingCondition } from '../../shared/k8s/retrying-condition.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import { conditionFor, conditionsOf } from '../../shared/k8s/conditions.js';
import { announce, needsInstall, sweep } from './sweep.js';
import { outcomeToAnnounce } from './job-outcome.js';

/**
 * software-install: a Software was added or changed, or its cluster became ready → install
 * its packages over SSH on every node and reply software.installed / software.failed. A
 * Software whose cluster is not ready waits (status says so) until cluster.ready. The Software's
 * own events go through the shared step's prologue (shared/k8s/define-step.ts): one read, the
 * pause gate, a transient fault recorded as Installed=Unknown.
 */
const onSoftwareChange = defineStep<SoftwareInstallConfig, KubeObjectData>({
  condition: SoftwareCondition.installed,
  read: (object, context) => {
    if (object.kind !== softwareKind || object.apiVersion !== provisioningApiVersion) {
      context.log.debug('not a Software; ignored', { kind: object.kind });
      return undefined;
    }
    const namespace = object.metadata.namespace;
    if (!namespace)
      throw invalid('MissingNamespace', `Software ${object.metadata.name} has no namespace in the event`);
    const { uid, resourceVersion } = object.metadata;
    return {
      target: softwareTarget(namespace, object.metadata.name),
      // The echoes of its own writes (the claim, the run's objects, the Job's name, a wait or a
      // failure) end unread; the announcement's is wanted (job-outcome.ts: echoWanted). Not a
      // version that shows an outcome to announce: the Job's pod may have recorded it between
      // two of this function's writes, and the data may only make the step skip.
      ...(uid && resourceVersion && !showsOutcomeToAnnounce(object)
        ? { shown: { uid, resourceVersion } }
        : {}),
    };
  },
  // Deleting a Software uninstalls nothing (contract section 11) and it has no finalizer: an
  // install Job's outcome recorded meanwhile is still announced, as before.
  deleting: 'act',
  // Installed=True is not the end: an install Job's outcome is announced, nodes that joined the
  // cluster get the packages, a retry or forgotten host keys run it again. decideInstall decides.
  done: () => false,
  run: async ({ context, clients }, live) => {
    const outcome = await decideInstall(context, clients, live);
    return 'event' in outcome ? outcome.event : undefined;
  },
});

/** The event's object shows an install Job's outcome not announced yet. */
function showsOutcomeToAnnounce(object: KubeObjectData): boolean {
  const status = object.status;
  if (typeof status !== 'object' || status === null || Array.isArray(status)) return false;
  return outcomeToAnnounce({ ...object, status: status as Record<string, unknown> }) !== undefined;
}

/**
 * installSoftware; a transient fault (API hiccup) is recorded as Installed=Unknown with its
 * reason before the 5xx, as the other functions do for their steps.
 */
function installRecordingFaults(
  context: FunctionContext<SoftwareInstallConfig>,
  clients: KubeClients,
  live: StoredObject,
) {
  const ref = softwareRef(live);
  return withRetryingCondition(
    clients,
    softwareTarget(ref.namespace, ref.name),
    ref,
    SoftwareCondition.installed,
    functionManager,
    context.log,
    () => installSoftware(context, clients, live),
  );
}

const installedForGeneration = (item: StoredObject) =>
  conditionFor(conditionsOf(item), SoftwareCondition.installed, item.metadata.generation ?? 0)?.status ===
  'True';

/**
 * Every Software of the cluster in its namespace that still needs installing, or that was
 * installed before the cluster changed (installSoftware installs again where nodes joined),
 * one after another.
 */
async function onClusterReady(
  context: FunctionContext<SoftwareInstallConfig>,
  data: ClusterReadyData,
): Promise<HandlerResult> {
  const clients = kubeClients(context.kubeConfig);
  const waiting = (
    await listCustomObjects(clients, softwaresResource, {
      namespace: data.provisioning.namespace,
      labelSelector: `cluster=${data.cluster}`,
    })
  )
    // Installed ones too: a re-provisioned cluster may have nodes that do not have the packages.
    .filter((item) => needsInstall(item) || installedForGeneration(item));
  context.log.info('cluster ready', { cluster: data.cluster, softwares: waiting.length });
  const events: CloudEvent<unknown>[] = [];
  for (const item of waiting) {
    const outcome = await installRecordingFaults(context, clients, item);
    if ('event' in outcome && outcome.event) events.push(outcome.event);
  }
  return announce(context, events);
}

export const definition: FunctionDefinition<SoftwareInstallConfig> = {
  name: functionName,
  events: {
    [SourceEventTypes.resourceAdd]: on(kubeObjectSchema, onSoftwareChange),
    [SourceEventTypes.resourceUpdate]: on(kubeObjectSchema, onSoftwareChange),
    [EventTypes.clusterReady]: on(clusterReadyDataSchema, onClusterReady),
    [SourceEventTypes.ping]: sweepOnPing(sweep),
  },
  configSchema: softwareInstallConfigSchema,
  metrics: softwareInstallMetrics,
};

/** The func convention's entry point (faas-js-runtime): see shared/server/func-adapter.ts. */
export const handle = funcHandle(definition);
