import type { CloudEvent } from 'cloudevents';
import { managedByLabel, managedByValue } from '../../shared/core/names.js';
import type { KubeObjectData } from '../../shared/events/types.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { readProvisioning } from '../../shared/k8s/provisioning.js';
import { jobState, readJob } from '../../shared/k8s/jobs.js';
import type { FunctionContext } from '../../shared/server/types.js';
import { kubeconfigPublisherName } from '../../shared/core/lifecycle-names.js';
import { EventTypes } from '../../shared/events/types.js';
import { completeJob } from './complete-job.js';
import { advanceKubeconfig } from './kubeconfig.js';
import type { KudJobLaunchConfig } from './config.js';
import { controllingProvisioning, jobTraceparent } from './job-state.js';
import { recordProgress } from './record-progress.js';

/**
 * A Job changed: if it is one of ours, find the Provisioning that controls it and finish the
 * chain from the live Job status. Completion is read from the cluster, never remembered, so
 * it survives any restart.
 */
export async function onJobUpdate(
  context: FunctionContext<KudJobLaunchConfig>,
  clients: KubeClients,
  object: KubeObjectData,
): Promise<CloudEvent<unknown> | undefined> {
  const labels = object.metadata.labels ?? {};
  if (object.kind !== 'Job' || labels[managedByLabel] !== managedByValue) {
    context.log.debug('not a bpa-functions Job; ignored', { kind: object.kind });
    return undefined;
  }
  const namespace = object.metadata.namespace;
  const owner = controllingProvisioning(object as Parameters<typeof controllingProvisioning>[0]);
  if (!namespace || !owner) return undefined;
  const job = await readJob(clients, namespace, object.metadata.name);
  const live = await readProvisioning(clients, namespace, owner.name);
  if (!job || !live || live.metadata.uid !== owner.uid || job.metadata?.uid !== object.metadata.uid) {
    context.log.info('Job or its Provisioning is gone or was replaced; event is stale');
    return undefined;
  }
  const cluster = live.metadata.labels?.cluster;
  if (cluster && job.metadata?.name === kubeconfigPublisherName(cluster)) {
    await advanceKubeconfig(context, clients, live);
    return undefined;
  }
  // A finished Job resumes the trace that launched it: its completion ends that trace.
  const launchedIn = jobTraceparent(job);
  if (launchedIn && jobState(job) !== 'running') context.continueTrace?.(launchedIn);
  // A running Job's update (its pod started or got ready): the progress, now, not at the sweep.
  if (jobState(job) === 'running') {
    await recordProgress(clients, live, job);
    return undefined;
  }
  const event = await completeJob(context, clients, live, job);
  if (event?.type === EventTypes.clusterReady) await publishAfterReady(context, clients, live);
  return event;
}

/**
 * KUD succeeded: start the kubeconfig's publication from the fresh status. A failure here is
 * logged, not the event's: cluster.ready is recorded, and the sweep publishes later.
 */
async function publishAfterReady(
  context: FunctionContext<KudJobLaunchConfig>,
  clients: KubeClients,
  live: { metadata: { namespace?: string; name: string } },
): Promise<void> {
  try {
    const fresh = await readProvisioning(clients, live.metadata.namespace ?? '', live.metadata.name);
    if (fresh) await advanceKubeconfig(context, clients, fresh);
  } catch (error) {
    context.log.warn('kubeconfig publication not started; the sweep tries again', { error: String(error) });
  }
}
