import type { V1Job, V1ObjectMeta } from '@kubernetes/client-node';
import type { CloudEvent } from 'cloudevents';
import { chainEvent } from '../../shared/cloudevents/chain-event.js';
import { z } from 'zod';
import { clusterTypeOf } from '../../shared/core/cluster-type.js';
import { sha256Hex } from '../../shared/core/hash.js';
import { buildKudJob, buildMountedInventoryConfigMap, type KudNodePath } from '../../shared/core/kud-job.js';
import { launchHash, launchSettingsHash } from '../../shared/core/launch-hash.js';
import { describeNodeChange } from '../../shared/core/node-change.js';
import { launchHashAnnotation, launchRetryAnnotation } from '../../shared/core/lifecycle-names.js';
import {
  kudJobName,
  managedByLabel,
  managedByValue,
  provisioningNameAnnotation,
  provisioningNamespaceAnnotation,
} from '../../shared/core/names.js';
import { planNodes } from '../../shared/core/node-plan.js';
import { objectConflictMessage } from '../../shared/core/ownership.js';
import { ownerOf } from '../../shared/core/render.js';
import { resolvedNodeSchema } from '../../shared/schemas/node.js';
import { BpaError, transient } from '../../shared/errors.js';
import { EventTypes, provisioningSubject } from '../../shared/events/types.js';
import { Reason } from '../../shared/reasons.js';
import { provisioningSchema, type Provisioning } from '../../shared/schemas/provisioning.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { applyConditions } from '../../shared/k8s/condition-writer.js';
import { fieldManagerFor } from '../../shared/k8s/status-apply.js';
import type { StepRun } from '../../shared/k8s/define-step.js';
import { conditionsOf, isTrueFor } from '../../shared/k8s/conditions.js';
import { upsertConfigMap } from '../../shared/k8s/config-maps.js';
import { createJobOrGetExisting, deleteJob } from '../../shared/k8s/jobs.js';
import { ownedObjectsFields, recordOwned } from '../../shared/k8s/owned-objects.js';
import { functionManager } from './name.js';

import { recordEvent } from '../../shared/k8s/events.js';
import {
  ProvisioningCondition,
  failProvisioning,
  provisioningIdentity,
  provisioningRef,
  provisioningTarget,
} from '../../shared/k8s/provisioning.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import { completeJob } from './complete-job.js';
import { placementOf, type KudJobLaunchConfig } from './config.js';
import { existingKudJob } from './existing-job.js';
import { readInstallerSettings } from './installer-settings.js';
import { drainNodes } from './drain.js';
import { decideLaunch, jobLaunchHash, type WantedLaunch } from './launch-decision.js';
import { nodeSetOfStatus, planNodePath } from './node-path.js';
import { jobTraceparentAnnotation, provisioningGenerationAnnotation } from './job-state.js';
import { jobsLaunched } from './metrics.js';
import { refusalOf } from './step-refusal.js';

/** How the launch went (contract section 5). */
type Launch =
  | { outcome: 'created' | 'replaced'; job: V1Job }
  /** The Job for exactly this launch already exists: success, nothing new. */
  | { outcome: 'exists'; job: V1Job }
  /** An older Job with another launch hash is still running: reported, not touched. */
  | { outcome: 'blocked'; job: V1Job };

/** The retry request being acted on: the annotation's value host-lookup recorded ('' when none). */
export const retryOf = (live: StoredObject) =>
  typeof live.status?.retry === 'string' ? live.status.retry : '';

const statusNodesSchema = z.array(resolvedNodeSchema).min(1);

/**
 * inventory.rendered → the `kud-<cluster>` Job, created idempotently; JobLaunched True and
 * status.jobName; reply kud.job.launched when a Job was created or replaced, nothing for a
 * duplicate. Events are pointers (contract section 10): the event only names the Provisioning
 * generation; the cluster, the inventory (rendered again from status.nodes, after
 * InventoryRendered True for this generation) and the launch hash all come from the API. The Job
 * and what it mounts live in the functions' namespace (contract section 12): the inventory
 * ConfigMap `<cluster>-inventory` written there now, and the operator's SSH key Secret. A Job refused by the API server (403, 422: RBAC, an admission webhook or a
 * ValidatingAdmissionPolicy) ends in Ready=False, reason JobRefused, with the server's message.
 * The prologue (read, current generation, pause, done) is the shared step's (index.ts).
 */
export async function launchJob(
  { context, clients }: StepRun<KudJobLaunchConfig>,
  live: StoredObject,
): Promise<CloudEvent<unknown> | undefined> {
  const ref = provisioningRef(live);
  const step = ProvisioningCondition.jobLaunched;
  const conditions = conditionsOf(live);
  if (!isTrueFor(conditions, ProvisioningCondition.inventoryRendered, ref.generation)) {
    context.log.info('inventory not rendered for this generation; the event is not taken as a fact');
    return undefined;
  }
  const provisioning = provisioningSchema.safeParse(live);
  if (!provisioning.success) return undefined; // host-lookup reports an invalid resource
  const owner = ownerOf(provisioning.data);
  const cluster = provisioning.data.metadata.labels.cluster;
  const nodes = statusNodesSchema.safeParse(live.status?.nodes);
  if (!nodes.success) {
    context.log.info('no resolved nodes in status for this generation; ignored');
    return undefined;
  }
  const functionsNamespace = context.config.FUNCTIONS_NAMESPACE;
  const target = provisioningTarget(ref.namespace, ref.name);
  // The Provisioning as last read or written here: the base of the status applies (no GET).
  let base = live;
  // The objects this launch wrote (the mounted inventory, the Job), recorded by the step's own
  // apply once the Job is there; alone only before a refusal is reported, or when that apply
  // writes nothing (another delivery recorded the step): one status write, not one per object.
  const written: { kind: string; metadata: V1ObjectMeta | undefined }[] = [];
  const recordWritten = async () => {
    base = (await recordOwned(clients, target, functionManager, owner.uid, written.splice(0), base)) ?? base;
  };
  const installerSettings = await readInstallerSettings(
    clients,
    context.config.FUNCTIONS_NAMESPACE,
    context.watched,
  );
  const settings = {
    image: context.config.KUD_IMAGE,
    cluster,
    podSubnet: provisioning.data.spec.PodSubnet,
    kudPlugins: provisioning.data.spec.KUDPlugins,
    installerSettings,
    sshKeySecret: context.config.SSH_KEY_SECRET,
    namespace: functionsNamespace,
  };
  const clusterType = clusterTypeOf(provisioning.data);
  // Grow, shrink or install (contract section 14), from the nodes the existing Job recorded.
  // The inventory is rendered again from status.nodes (contract section 12): never the tenant's
  // <cluster>-inventory, which the tenant can edit between the render and the launch.
  const existing = await existingKudJob(
    clients,
    context.watched,
    live,
    functionsNamespace,
    kudJobName(cluster),
  );
  const plan = planNodePath({
    cluster,
    clusterType,
    existing,
    ownerUid: owner.uid,
    settingsHash: launchSettingsHash(settings, clusterType),
    wanted: nodeSetOfStatus(nodes.data, planNodes(provisioning.data.spec).workerOrder),
  });
  if ('refused' in plan)
    return failProvisioning(
      clients,
      context.functionName,
      live,
      { step, reason: Reason[plan.refused.reason], message: plan.refused.message },
      context.log,
      { apply: true },
    );
  const { inventory, path } = plan;
  const inventorySha256 = sha256Hex(inventory);
  const hash = plan.sameLaunchHash ?? launchHash({ ...settings, inventorySha256, path });
  const doing = describeNodeChange(plan.change);
  const wanted: WantedLaunch = {
    launchHash: hash,
    generation: ref.generation,
    retry: retryOf(live),
    ownerUid: owner.uid,
  };
  const desired = desiredJob(context.config, provisioning.data, inventorySha256, wanted, {
    installerSettings,
    traceparent: context.traceparent,
    path,
    annotations: plan.annotations,
  });
  const jobName = kudJobName(cluster);

  // What the Job mounts, in the functions' namespace, written right before the Job is created (a
  // Job that exists or still runs keeps the inventory it was launched with).
  const writeMounted = async () => {
    const mounted = await upsertConfigMap(
      clients,
      buildMountedInventoryConfigMap(owner, cluster, inventory, inventorySha256, functionsNamespace),
    );
    // Only the operator can write there: one the functions did not label is the operator's own.
    if (mounted.configMap.metadata?.labels?.[managedByLabel] !== managedByValue)
      throw new BpaError(
        Reason.ObjectConflict,
        objectConflictMessage('ConfigMap', mounted.configMap.metadata ?? {}, owner),
      );
    written.push({ kind: 'ConfigMap', metadata: mounted.configMap.metadata });
  };

  let launch: Launch;
  try {
    // Kubespray's remove-node.yml resets the node: its pods leave first, through the cluster's own
    // API. Before the existing Job is replaced: it records the nodes the cluster has, so a drain
    // that fails (retried) leaves the decision as it is.
    const fresh = decideLaunch(existing, wanted);
    if (path?.kind === 'remove-node' && (fresh === 'create' || fresh === 'replace'))
      await drainNodes(clients, live, owner, cluster, path.nodes, context.log);
    launch = await createOrReplace(clients, desired, existing, wanted, writeMounted);
  } catch (error) {
    const refusal = refusalOf(error, step, Reason.JobRefused);
    if (!refusal) throw error;
    await recordWritten();
    return failProvisioning(clients, context.functionName, base, refusal, context.log, { apply: true });
  }
  written.push({ kind: 'Job', metadata: launch.job.metadata });
  // The step's own apply records them (one write); when it writes nothing, recordWritten does.
  const recordedWith = (fresh: StoredObject) => ownedObjectsFields(fresh, owner.uid, written) ?? {};
  const identity = provisioningIdentity(ref);
  const manager = fieldManagerFor(context.functionName);

  if (launch.outcome === 'blocked') {
    const message = `Job ${jobName} is still running another launch (hash ${jobLaunchHash(launch.job) ?? 'unknown'}); it is left alone and replaced once it finishes`;
    const result = await applyConditions(clients, target, {
      ref,
      conditions: [{ type: step, status: 'False', reason: Reason.PreviousJobRunning, message }],
      fields: recordedWith,
      alreadyDone: (fresh) => isTrueFor(fresh, step, ref.generation),
      manager,
      live: base,
    });
    if (result.outcome !== 'written') await recordWritten();
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
      ? `KUD installer Job ${jobName} already exists for launch hash ${hash} (inventory sha256 ${inventorySha256})`
      : `KUD installer Job ${jobName} ${launch.outcome} for launch hash ${hash} (inventory sha256 ${inventorySha256}): ${doing}`;
  const result = await applyConditions(clients, target, {
    ref,
    conditions: [
      { type: step, status: 'True', reason: Reason.JobLaunched, message },
      {
        type: ProvisioningCondition.ready,
        status: 'Unknown',
        reason: Reason.Provisioning,
        message: `KUD installer Job ${jobName} is running: ${doing}`,
      },
    ],
    fields: (fresh) => ({ jobName, ...recordedWith(fresh) }),
    alreadyDone: (fresh) => isTrueFor(fresh, step, ref.generation),
    // Server-side apply as bpa-kud-job-launch (shared/k8s/status-apply.ts).
    manager,
    live: base,
  });
  if (result.outcome !== 'written') await recordWritten();
  context.log.info('KUD Job launch', { jobName, launch: launch.outcome, status: result.outcome });
  if (launch.outcome === 'exists') {
    if (result.outcome !== 'written') return undefined;
    // Already finished (e.g. a relaunch of the very same Job): no Job event will come.
    return completeJob(context, clients, result.object, launch.job);
  }
  // The delivery that created the Job announces it, also when a concurrent copy of its event
  // (which found the Job there: 'exists') recorded JobLaunched first: only one create can win,
  // so there is exactly one announcement per Job.
  if (result.outcome !== 'written' && result.outcome !== 'already-done') return undefined;
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
    { provisioning: ref, cluster, jobName, inventorySha256, outcome: launch.outcome },
    { cluster },
  );
}

function desiredJob(
  config: KudJobLaunchConfig,
  provisioning: Provisioning,
  inventorySha256: string,
  wanted: WantedLaunch,
  extra: {
    installerSettings: Record<string, string> | undefined;
    traceparent: string | undefined;
    path: KudNodePath | undefined;
    /** What the Job records about the cluster (node-path.ts). */
    annotations: Record<string, string>;
  },
) {
  const { installerSettings, traceparent } = extra;
  const job = buildKudJob(
    {
      owner: ownerOf(provisioning),
      cluster: provisioning.metadata.labels.cluster,
      inventorySha256,
      podSubnet: provisioning.spec.PodSubnet,
      kudPlugins: provisioning.spec.KUDPlugins,
      ...(extra.path ? { path: extra.path } : {}),
    },
    {
      image: config.KUD_IMAGE,
      activeDeadlineSeconds: provisioning.spec.installTimeoutSeconds ?? config.KUD_ACTIVE_DEADLINE_SECONDS,
      sshKeySecret: config.SSH_KEY_SECRET,
      installerEnv: installerSettings ?? {},
      functionsNamespace: config.FUNCTIONS_NAMESPACE,
      placement: placementOf(config),
    },
  );
  job.metadata = {
    ...job.metadata,
    annotations: {
      ...job.metadata?.annotations,
      ...extra.annotations,
      [launchHashAnnotation]: wanted.launchHash,
      [provisioningGenerationAnnotation]: String(wanted.generation),
      ...(wanted.retry ? { [launchRetryAnnotation]: wanted.retry } : {}),
      ...(traceparent ? { [jobTraceparentAnnotation]: traceparent } : {}),
    },
  };
  return job;
}

/**
 * Contract sections 5 and 10 (shared by launch-decision.ts): the same launch → the existing Job
 * is success; another launch and finished → replaced (deleted, then created again); another
 * launch still running → left alone; a Job the functions did not create → ObjectConflict.
 * `present` is the Job as the step read it (its plan came from it): a Job created or deleted
 * since shows in the create's 409 or the delete's precondition.
 */
async function createOrReplace(
  clients: KubeClients,
  desired: V1Job,
  present: V1Job | undefined,
  wanted: WantedLaunch,
  beforeCreate: () => Promise<void>,
): Promise<Launch> {
  let existing: V1Job;
  if (!present) {
    await beforeCreate();
    const first = await createJobOrGetExisting(clients, desired);
    if (first.created) return { outcome: 'created', job: first.job };
    existing = first.existing;
  } else existing = present;
  const decision = decideLaunch(existing, wanted);
  if (decision === 'conflict')
    throw new BpaError(
      Reason.ObjectConflict,
      objectConflictMessage('Job', existing.metadata ?? {}, {
        namespace: desired.metadata?.annotations?.[provisioningNamespaceAnnotation] ?? '',
        name: desired.metadata?.annotations?.[provisioningNameAnnotation] ?? '',
      }),
    );
  if (decision === 'exists') return { outcome: 'exists', job: existing };
  if (decision === 'blocked') return { outcome: 'blocked', job: existing };
  await deleteJob(clients, existing);
  await beforeCreate();
  const second = await createJobOrGetExisting(clients, desired);
  if (second.created) return { outcome: 'replaced', job: second.job };
  if (
    second.existing.metadata?.uid !== existing.metadata?.uid &&
    decideLaunch(second.existing, wanted) === 'exists'
  )
    return { outcome: 'exists', job: second.existing }; // a concurrent delivery replaced it first
  throw transient(
    'JobReplacePending',
    `Job ${desired.metadata?.namespace}/${desired.metadata?.name} is still being deleted; the launch is retried`,
  );
}
