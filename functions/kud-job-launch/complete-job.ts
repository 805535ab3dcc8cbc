import type { V1Job } from '@kubernetes/client-node';
import type { CloudEvent } from 'cloudevents';
import { z } from 'zod';
import { chainEvent } from '../../shared/cloudevents/chain-event.js';
import { buildClusterConfigMap } from '../../shared/core/cluster-configmap.js';
import { clusterConfigMapName } from '../../shared/core/names.js';
import { planNodes } from '../../shared/core/node-plan.js';
import { ownerOf } from '../../shared/core/render.js';
import { EventTypes, provisioningSubject } from '../../shared/events/types.js';
import { resolvedNodeSchema } from '../../shared/schemas/node.js';
import { provisioningSchema } from '../../shared/schemas/provisioning.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { writeConditions } from '../../shared/k8s/condition-writer.js';
import { conditionFor, conditionsOf, isTrueFor } from '../../shared/k8s/conditions.js';
import { upsertConfigMap } from '../../shared/k8s/config-maps.js';
import { recordEvent } from '../../shared/k8s/events.js';
import {
  ProvisioningCondition,
  failProvisioning,
  provisioningIdentity,
  provisioningRef,
  provisioningTarget,
} from '../../shared/k8s/provisioning.js';
import { creationTimeOf, type StoredObject } from '../../shared/k8s/stored-object.js';
import type { FunctionContext } from '../../shared/server/types.js';
import type { KudJobLaunchConfig } from './config.js';
import { jobState, runDurationSeconds } from './job-state.js';
import { jobsFinished, kudRunDuration, timeToReady } from './metrics.js';

export const functionName = 'kud-job-launch';
const statusNodesSchema = z.array(resolvedNodeSchema).min(1);

/** The contract's wording for a failed KUD run (section 6). */
export const jobFailedMessage = (cluster: string) =>
  `Job Failed, KUD not installed in Cluster ${cluster}, check pod logs`;

/**
 * Acts on a finished KUD Job of the live Provisioning's current generation: Complete → the
 * `<cluster>-configmap` with every node's IP, KudInstalled and Ready True, `cluster.ready`;
 * Failed → KudInstalled and Ready False with the contract message, `provisioning.failed`.
 * Returns nothing for a running Job, a Job of another generation, or a completion already
 * recorded (Job updates keep coming: each status change of the Job is an event).
 */
export async function completeJob(
  context: FunctionContext<KudJobLaunchConfig>,
  clients: KubeClients,
  live: StoredObject,
  job: V1Job,
): Promise<CloudEvent<unknown> | undefined> {
  const ref = provisioningRef(live);
  const conditions = conditionsOf(live);
  const step = ProvisioningCondition.kudInstalled;
  if (conditionFor(conditions, step, ref.generation)) return undefined;
  const jobName = job.metadata?.name;
  if (
    !isTrueFor(conditions, ProvisioningCondition.jobLaunched, ref.generation) ||
    live.status?.jobName !== jobName
  ) {
    context.log.debug('Job is not the one launched for this generation (yet)', {
      jobName,
      generation: ref.generation,
    });
    return undefined;
  }
  const state = jobState(job);
  if (state === 'running') return undefined;
  const parsed = provisioningSchema.safeParse(live);
  const nodes = statusNodesSchema.safeParse(live.status?.nodes);
  if (!parsed.success || !nodes.success) return undefined; // host-lookup reports an invalid resource
  const cluster = parsed.data.metadata.labels.cluster;
  const duration = runDurationSeconds(job);

  if (state === 'failed') {
    const event = await failProvisioning(
      clients,
      functionName,
      live,
      { step, reason: 'JobFailed', message: jobFailedMessage(cluster) },
      context.log,
    );
    if (event) {
      context.metrics?.counter(jobsFinished).inc({ outcome: 'failed' });
      if (duration !== undefined)
        context.metrics?.histogram(kudRunDuration).observe({ outcome: 'failed' }, duration);
    }
    return event;
  }

  const configMap = buildClusterConfigMap(
    ownerOf(parsed.data),
    cluster,
    nodes.data,
    planNodes(parsed.data.spec).workerOrder,
  );
  await upsertConfigMap(clients, configMap);
  const configMapName = clusterConfigMapName(cluster);
  const message = `KUD installed in cluster ${cluster} by Job ${jobName}; node IPs in ConfigMap ${configMapName}`;
  const result = await writeConditions(clients, provisioningTarget(ref.namespace, ref.name), ref, {
    conditions: [
      { type: step, status: 'True', reason: 'KudInstalled', message },
      {
        type: ProvisioningCondition.ready,
        status: 'True',
        reason: 'ClusterReady',
        message: `Cluster ${cluster} is ready`,
      },
    ],
    alreadyDone: (fresh) => conditionFor(fresh, step, ref.generation) !== undefined,
  });
  if (result.outcome !== 'written') return undefined;
  context.metrics?.counter(jobsFinished).inc({ outcome: 'succeeded' });
  if (duration !== undefined)
    context.metrics?.histogram(kudRunDuration).observe({ outcome: 'succeeded' }, duration);
  const created = creationTimeOf(live);
  if (created) context.metrics?.histogram(timeToReady).observe((Date.now() - created.getTime()) / 1000);
  await recordEvent(
    clients,
    {
      object: provisioningIdentity(ref),
      type: 'Normal',
      reason: 'KudInstalled',
      message,
      component: functionName,
    },
    context.log,
  );
  context.log.info('cluster ready', { cluster, jobName });
  return chainEvent(
    EventTypes.clusterReady,
    functionName,
    provisioningSubject(ref.namespace, ref.name),
    { provisioning: ref, cluster, configMap: configMapName, nodes: nodes.data },
    { cluster },
  );
}
