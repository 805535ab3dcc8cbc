import type { V1Job } from '@kubernetes/client-node';
import type { CloudEvent } from 'cloudevents';
import { z } from 'zod';
import { buildClusterConfigMap } from '../../shared/core/cluster-configmap.js';
import { isDeepStrictEqual } from 'node:util';
import {
  failedByDeadline,
  jobProgress,
  newestPod,
  type JobProgress,
} from '../../shared/core/job-progress.js';
import { claimedHostsField, claimedHostsOf, retainedHostsField } from '../../shared/core/host-claim.js';
import { clusterConfigMapName } from '../../shared/core/names.js';
import { markManaged } from '../../shared/core/ownership.js';
import { planNodes } from '../../shared/core/node-plan.js';
import { ownerOf } from '../../shared/core/render.js';
import { EventTypes } from '../../shared/events/types.js';
import { Reason } from '../../shared/reasons.js';
import type { Failure } from '../../shared/k8s/step-report.js';
import { resolvedNodeSchema } from '../../shared/schemas/node.js';
import {
  jobLogTailMaxBytes,
  jobStatusSchema,
  provisioningSchema,
} from '../../shared/schemas/provisioning.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { applyConditions } from '../../shared/k8s/condition-writer.js';
import { functionManager } from './name.js';

import { ownershipOf, recordOwned, withRecordedOwnership } from '../../shared/k8s/owned-objects.js';
import { conditionFor, conditionsOf, isTrueFor } from '../../shared/k8s/conditions.js';
import { upsertConfigMap } from '../../shared/k8s/config-maps.js';
import { releaseHosts } from '../../shared/k8s/host-claims.js';
import {
  ProvisioningCondition,
  completeProvisioningStep,
  failProvisioning,
  provisioningRef,
  provisioningTarget,
} from '../../shared/k8s/provisioning.js';
import { creationTimeOf, type StoredObject } from '../../shared/k8s/stored-object.js';
import type { Logger } from '../../shared/log.js';
import type { FunctionContext } from '../../shared/server/types.js';
import type { KudJobLaunchConfig } from './config.js';
import { runDurationSeconds } from './job-state.js';
import { jobState, lastBytes, podLogTail, podsOfJob } from '../../shared/k8s/jobs.js';
import { failedNodesSummary } from '../../shared/core/ansible-progress.js';
import { nodesFromLog, progressLogTail, recordedNodes } from './record-progress.js';
import { jobsFinished, kudRunDuration, timeToReady } from './metrics.js';
import { refusalOf } from './step-refusal.js';

const statusNodesSchema = z.array(resolvedNodeSchema).min(1);

/**
 * The contract's wording for a failed KUD run (sections 6 and 10): its text, then the pod whose
 * logs to read when one is known. The contract's text stays a prefix of the message.
 */
export const jobFailedMessage = (cluster: string, pod?: string) =>
  `Job Failed, KUD not installed in Cluster ${cluster}, check pod logs${pod ? ` (pod ${pod})` : ''}`;

/**
 * Why a KUD Job failed, in the status's words: its deadline (JobDeadlineExceeded), or the
 * contract's message, with the pod's name, for any other failure (section 10).
 */
export function jobFailure(job: V1Job, cluster: string, pod?: string, failedHosts?: string): Failure {
  const step = ProvisioningCondition.kudInstalled;
  // The installer's own words (contract section 14): which host failed, at which task, and why.
  const hosts = failedHosts ? `: ${failedHosts}` : '';
  if (failedByDeadline(job))
    return {
      step,
      reason: Reason.JobDeadlineExceeded,
      message: `Job ${job.metadata?.name} exceeded its deadline of ${job.spec?.activeDeadlineSeconds ?? '?'} s, KUD not installed in Cluster ${cluster} (raise spec.installTimeoutSeconds or KUD_ACTIVE_DEADLINE_SECONDS)${hosts}`,
    };
  return { step, reason: Reason.JobFailed, message: `${jobFailedMessage(cluster, pod)}${hosts}` };
}

/**
 * status.job of a finished KUD Job: its pod (the newest; a backoffLimit 0 Job has one, found by the
 * Job's controller uid), its phase, the node it ran on (where the cleanup and the publisher go),
 * and for a failed pod its last log lines, bounded: tenants cannot read pods in the functions'
 * namespace (contract section 12). The pod already gone: what the sweep last recorded. `log`: the
 * pod's log tail read once for both, the installer's output the nodes' progress comes from.
 */
export async function finishedJobStatus(
  clients: KubeClients,
  live: StoredObject,
  job: V1Job,
): Promise<{ progress: JobProgress; log?: string }> {
  const pod = newestPod(await podsOfJob(clients, job));
  const recorded = jobStatusSchema.safeParse(live.status?.job);
  const before = recorded.success && recorded.data.name === job.metadata?.name ? recorded.data : undefined;
  const progress = jobProgress(job, pod, new Date());
  delete progress.secondsLeft;
  delete progress.waitingReason;
  delete progress.waitingMessage;
  if (!pod) {
    if (before?.pod) progress.pod = before.pod;
    if (before?.nodeName) progress.nodeName = before.nodeName;
  }
  const log = pod ? await podLogTail(clients, pod, progressLogTail) : undefined;
  if (log && jobState(job) === 'failed') {
    // The last 20 lines, as the status showed them before progress came from the same read.
    const tail = lastBytes(log.replace(/\n$/, '').split('\n').slice(-20).join('\n'), jobLogTailMaxBytes);
    if (tail) progress.logTail = tail;
  }
  return { progress, log };
}

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
  // Recorded once per generation; JobMissing is not an end (a new Job is launched for it).
  const recorded = conditionFor(conditions, step, ref.generation);
  if (recorded && recorded.reason !== Reason.JobMissing) return undefined;
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

  const { progress: finished, log } = await finishedJobStatus(clients, live, job);
  // Each node's end in the installer's output (PLAY RECAP), with what the runs' reads recorded.
  const withNodes = (fresh: StoredObject) => {
    const progressed = nodesFromLog(fresh, finished.pod, log);
    return progressed ? { job: finished, nodes: progressed } : { job: finished };
  };
  if (state === 'failed') {
    // The pod, its last lines and the nodes first, then the failure that points to them.
    await applyConditions(clients, provisioningTarget(ref.namespace, ref.name), {
      ref,
      conditions: [],
      fields: withNodes,
      alreadyDone: (_conditions, fresh) =>
        Object.entries(withNodes(fresh)).every(([key, value]) =>
          isDeepStrictEqual(fresh.status?.[key], value),
        ),
      manager: functionManager,
      live,
    });
    // The pod gone (its log with it): what the reads while it ran recorded.
    const failedHosts = failedNodesSummary(withNodes(live).nodes ?? recordedNodes(live));
    const event = await failProvisioning(
      clients,
      context.functionName,
      live,
      jobFailure(job, cluster, finished.pod, failedHosts),
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
  try {
    const owner = ownerOf(parsed.data);
    // Two handlers of one completion (two updates of the Job, the sweep) may race: the other one's
    // fresh ConfigMap, not recorded in status.ownedObjects yet, is judged again on the owner as it
    // is a moment later (withRecordedOwnership), then a transient OwnershipPending (retried), never
    // a conflict (shared/core/ownership.ts).
    const written = await withRecordedOwnership(
      clients,
      provisioningTarget(ref.namespace, ref.name),
      live,
      (current) => upsertConfigMap(clients, markManaged(configMap), ownershipOf(owner, current)),
    );
    await recordOwned(clients, provisioningTarget(ref.namespace, ref.name), functionManager, owner.uid, [
      { kind: 'ConfigMap', metadata: written.configMap.metadata },
    ]);
  } catch (error) {
    // A <cluster>-configmap the functions did not create: left untouched, reported.
    const refusal = refusalOf(error, step);
    if (!refusal) throw error;
    return failProvisioning(clients, context.functionName, live, refusal, context.log);
  }
  // Hosts whose nodes left the spec were kept claimed until KUD ran without them (drained and
  // removed by remove-node.yml, or left out of a full install): released now, after the success.
  const retained = claimedHostsOf(live.status, retainedHostsField);
  const hostFields = retained.length > 0 ? await releaseRetained(clients, live, context.log) : {};
  const configMapName = clusterConfigMapName(cluster);
  const event = await completeProvisioningStep(
    clients,
    context.functionName,
    live,
    {
      step,
      reason: Reason.KudInstalled,
      message: `KUD installed in cluster ${cluster} by Job ${jobName}; node IPs in ConfigMap ${configMapName}`,
      ready: { status: 'True', reason: Reason.ClusterReady, message: `Cluster ${cluster} is ready` },
      fields: (fresh: StoredObject) => ({ ...withNodes(fresh), ...hostFields }),
      // Failed or succeeded: a Job's completion is recorded once per generation.
      alreadyDone: (fresh) => {
        const current = conditionFor(fresh, step, ref.generation);
        return current !== undefined && current.reason !== Reason.JobMissing;
      },
      announce: {
        type: EventTypes.clusterReady,
        cluster,
        data: { provisioning: ref, cluster, configMap: configMapName, nodes: nodes.data },
      },
    },
    context.log,
  );
  if (!event) return undefined;
  context.metrics?.counter(jobsFinished).inc({ outcome: 'succeeded' });
  if (duration !== undefined)
    context.metrics?.histogram(kudRunDuration).observe({ outcome: 'succeeded' }, duration);
  const created = creationTimeOf(live);
  if (created) context.metrics?.histogram(timeToReady).observe((Date.now() - created.getTime()) / 1000);
  context.log.info('cluster ready', { cluster, jobName });
  return event;
}

/**
 * Releases status.retainedHosts and returns the status fields without them. A host that cannot
 * be released (gone, someone else's, refused) leaves the lists all the same: deletion releases
 * status.claimedHosts, and a claim of a Provisioning that no longer names the host is taken over
 * by the next one only once this Provisioning is gone (holderIsGone).
 */
async function releaseRetained(
  clients: KubeClients,
  live: StoredObject,
  log: Logger,
): Promise<Record<string, unknown>> {
  await releaseHosts(clients, live, log, retainedHostsField);
  const released = new Set(
    claimedHostsOf(live.status, retainedHostsField).map(
      (host) => `${host.kind}:${host.namespace}/${host.name}`,
    ),
  );
  return {
    [claimedHostsField]: claimedHostsOf(live.status).filter(
      (host) => !released.has(`${host.kind}:${host.namespace}/${host.name}`),
    ),
    [retainedHostsField]: [],
  };
}
