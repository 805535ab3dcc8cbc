import type { V1Job } from '@kubernetes/client-node';
import type { CloudEvent } from 'cloudevents';
import { chainEvent } from '../../shared/cloudevents/chain-event.js';
import { sha256Hex } from '../../shared/core/hash.js';
import { buildKudJob } from '../../shared/core/kud-job.js';
import { inventoryKey, kudJobName } from '../../shared/core/names.js';
import { ownerOf } from '../../shared/core/render.js';
import { transient } from '../../shared/errors.js';
import { EventTypes, provisioningSubject, type InventoryRenderedData } from '../../shared/events/types.js';
import { Reason } from '../../shared/reasons.js';
import { provisioningSchema, type Provisioning } from '../../shared/schemas/provisioning.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { isCurrent, writeConditions } from '../../shared/k8s/condition-writer.js';
import { conditionsOf, isTrueFor } from '../../shared/k8s/conditions.js';
import { readConfigMap } from '../../shared/k8s/config-maps.js';
import { createJobOrGetExisting, deleteJob } from '../../shared/k8s/jobs.js';
import { recordEvent } from '../../shared/k8s/events.js';
import {
  ProvisioningCondition,
  provisioningIdentity,
  provisioningTarget,
  readProvisioning,
} from '../../shared/k8s/provisioning.js';
import type { FunctionContext } from '../../shared/server/types.js';
import { completeJob } from './complete-job.js';
import type { KudJobLaunchConfig } from './config.js';
import {
  jobInventorySha256,
  jobProvisioningGeneration,
  jobState,
  jobTraceparentAnnotation,
  provisioningGenerationAnnotation,
} from './job-state.js';
import { jobsLaunched } from './metrics.js';

/** How the launch went (contract section 5). */
type Launch =
  | { outcome: 'created' | 'replaced'; job: V1Job }
  /** The Job for this inventory already exists: success, nothing new. */
  | { outcome: 'exists'; job: V1Job }
  /** An older Job with another inventory is still running: reported, not touched. */
  | { outcome: 'blocked'; job: V1Job };

/**
 * inventory.rendered → the `kud-<cluster>` Job, created idempotently; JobLaunched True and
 * status.jobName; reply kud.job.launched when a Job was created or replaced, nothing for a
 * duplicate. An event about another generation or another inventory than the stored one is
 * stale and ignored.
 */
export async function launchJob(
  context: FunctionContext<KudJobLaunchConfig>,
  clients: KubeClients,
  data: InventoryRenderedData,
): Promise<CloudEvent<unknown> | undefined> {
  const ref = data.provisioning;
  const live = await readProvisioning(clients, ref.namespace, ref.name);
  if (!live || !isCurrent(live, ref)) {
    context.log.info('event is about another generation or a deleted Provisioning; ignored');
    return undefined;
  }
  const step = ProvisioningCondition.jobLaunched;
  if (isTrueFor(conditionsOf(live), step, ref.generation)) {
    context.log.debug('Job already launched for this generation');
    return undefined;
  }
  const provisioning = provisioningSchema.safeParse(live);
  if (!provisioning.success) return undefined; // host-lookup reports an invalid resource
  const inventory = (await readConfigMap(clients, ref.namespace, data.configMap))?.data?.[inventoryKey];
  if (inventory === undefined || sha256Hex(inventory) !== data.inventorySha256) {
    context.log.info('stored inventory differs from the event; ignored as stale', {
      configMap: data.configMap,
    });
    return undefined;
  }

  const desired = desiredJob(
    context.config,
    provisioning.data,
    data.inventorySha256,
    ref.generation,
    context.traceparent,
  );
  const launch = await createOrReplace(clients, desired, data.inventorySha256, ref.generation);
  const jobName = kudJobName(data.cluster);
  const target = provisioningTarget(ref.namespace, ref.name);
  const identity = provisioningIdentity(ref);

  if (launch.outcome === 'blocked') {
    const message = `Job ${jobName} is still running with another inventory (sha256 ${jobInventorySha256(launch.job) ?? 'unknown'}); it is left alone and replaced once it finishes`;
    const result = await writeConditions(clients, target, ref, {
      conditions: [{ type: step, status: 'False', reason: Reason.PreviousJobRunning, message }],
      alreadyDone: (fresh) => isTrueFor(fresh, step, ref.generation),
    });
    if (result.outcome === 'written')
      await recordEvent(
        clients,
        {
          object: identity,
          type: 'Warning',
          reason: Reason.PreviousJobRunning,
          message,
          component: context.functionName,
        },
        context.log,
      );
    return undefined;
  }

  const message =
    launch.outcome === 'exists'
      ? `KUD installer Job ${jobName} already exists for inventory sha256 ${data.inventorySha256}`
      : `KUD installer Job ${jobName} ${launch.outcome} for inventory sha256 ${data.inventorySha256}`;
  const result = await writeConditions(clients, target, ref, {
    conditions: [
      { type: step, status: 'True', reason: Reason.JobLaunched, message },
      {
        type: ProvisioningCondition.ready,
        status: 'Unknown',
        reason: Reason.Provisioning,
        message: `KUD installer Job ${jobName} is running`,
      },
    ],
    fields: { jobName },
    alreadyDone: (fresh) => isTrueFor(fresh, step, ref.generation),
  });
  context.log.info('KUD Job launch', { jobName, launch: launch.outcome, status: result.outcome });
  if (result.outcome !== 'written') return undefined;

  if (launch.outcome === 'exists') {
    // Already finished (e.g. a spec change that kept the inventory): no Job event will come.
    return completeJob(context, clients, result.object, launch.job);
  }
  context.metrics?.counter(jobsLaunched).inc({ outcome: launch.outcome });
  await recordEvent(
    clients,
    {
      object: identity,
      type: 'Normal',
      reason: Reason.JobLaunched,
      message,
      component: context.functionName,
    },
    context.log,
  );
  return chainEvent(
    EventTypes.kudJobLaunched,
    context.functionName,
    provisioningSubject(ref.namespace, ref.name),
    {
      provisioning: ref,
      cluster: data.cluster,
      jobName,
      inventorySha256: data.inventorySha256,
      outcome: launch.outcome,
    },
    { cluster: data.cluster },
  );
}

function desiredJob(
  config: KudJobLaunchConfig,
  provisioning: Provisioning,
  inventorySha256: string,
  generation: number,
  traceparent: string | undefined,
) {
  const job = buildKudJob(
    {
      owner: ownerOf(provisioning),
      cluster: provisioning.metadata.labels.cluster,
      inventorySha256,
      podSubnet: provisioning.spec.PodSubnet,
      kudPlugins: provisioning.spec.KUDPlugins,
    },
    {
      image: config.KUD_IMAGE,
      activeDeadlineSeconds: config.KUD_ACTIVE_DEADLINE_SECONDS,
      sshKeySecret: config.SSH_KEY_SECRET,
    },
  );
  job.metadata = {
    ...job.metadata,
    annotations: {
      ...job.metadata?.annotations,
      [provisioningGenerationAnnotation]: String(generation),
      ...(traceparent ? { [jobTraceparentAnnotation]: traceparent } : {}),
    },
  };
  return job;
}

/**
 * Contract section 5: same inventory → the existing Job is success; another inventory and
 * finished → replaced (deleted, then created again); another inventory and running → left
 * alone. A failed Job with the same inventory from an older generation is replaced too: the
 * spec change is the user's way to retry.
 */
async function createOrReplace(
  clients: KubeClients,
  desired: V1Job,
  inventorySha256: string,
  generation: number,
): Promise<Launch> {
  const first = await createJobOrGetExisting(clients, desired);
  if (first.created) return { outcome: 'created', job: first.job };
  const existing = first.existing;
  const state = jobState(existing);
  if (jobInventorySha256(existing) === inventorySha256) {
    const retry = state === 'failed' && (jobProvisioningGeneration(existing) ?? 0) < generation;
    if (!retry) return { outcome: 'exists', job: existing };
  } else if (state === 'running') {
    return { outcome: 'blocked', job: existing };
  }
  await deleteJob(clients, existing);
  const second = await createJobOrGetExisting(clients, desired);
  if (second.created) return { outcome: 'replaced', job: second.job };
  if (
    second.existing.metadata?.uid !== existing.metadata?.uid &&
    jobInventorySha256(second.existing) === inventorySha256
  )
    return { outcome: 'exists', job: second.existing }; // a concurrent delivery replaced it first
  throw transient(
    'JobReplacePending',
    `Job ${desired.metadata?.namespace}/${desired.metadata?.name} is still being deleted; the launch is retried`,
  );
}
