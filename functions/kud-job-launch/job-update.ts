import type { CloudEvent } from 'cloudevents';
import { managedByLabel, managedByValue } from '../../shared/core/names.js';
import type { KubeObjectData } from '../../shared/events/types.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { pauseGate } from '../../shared/k8s/paused.js';
import { readProvisioning } from '../../shared/k8s/provisioning.js';
import { jobState, readJob } from '../../shared/k8s/jobs.js';
import type { FunctionContext } from '../../shared/server/types.js';
import { kubeconfigPublisherName } from '../../shared/core/lifecycle-names.js';
import { EventTypes } from '../../shared/events/types.js';
import { completeJob } from './complete-job.js';
import { advanceKubeconfig } from './kubeconfig.js';
import type { KudJobLaunchConfig } from './config.js';
import { launchingProvisioning, jobTraceparent } from './job-state.js';
import type { V1Job } from '@kubernetes/client-node';
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
  // Only the functions' namespace holds the chain's Jobs (contract section 12): a look-alike in a
  // tenant's namespace, whatever its labels and annotations, is never read.
  const functionsNamespace = context.config.FUNCTIONS_NAMESPACE;
  const owner = launchingProvisioning(object as { metadata?: V1Job['metadata'] }, functionsNamespace);
  if (!owner) {
    context.log.debug('not a Job of the functions’ namespace; ignored', {
      namespace: object.metadata.namespace,
    });
    return undefined;
  }
  const job = await readJob(clients, functionsNamespace, object.metadata.name);
  const live = await readProvisioning(clients, owner.namespace, owner.name);
  if (!job || !live || live.metadata.uid !== owner.uid || job.metadata?.uid !== object.metadata.uid) {
    context.log.info('Job or its Provisioning is gone or was replaced; event is stale');
    return undefined;
  }
  if ((await pauseGate(clients, live, { component: context.functionName, log: context.log })).stop)
    return undefined;
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
