import type { V1Job } from '@kubernetes/client-node';
import { newestPod } from '../../shared/core/job-progress.js';
import {
  kubeconfigPublisherName,
  kubeconfigDigestField,
  kubeconfigSecretKey,
  kubeconfigSecretName,
} from '../../shared/core/lifecycle-names.js';
import {
  buildKubeconfigPublisher,
  buildKubeconfigSecret,
  publisherGenerationAnnotation,
} from '../../shared/core/lifecycle-objects.js';
import { managedByLabel, managedByValue } from '../../shared/core/names.js';
import { carriesOwnerUid, objectConflictMessage, ownershipError } from '../../shared/core/ownership.js';
import { ownerOf } from '../../shared/core/render.js';
import { sha256Hex } from '../../shared/core/hash.js';
import { BpaError } from '../../shared/errors.js';
import { Reason, sweepRetries, type ConditionReason } from '../../shared/reasons.js';
import { provisioningSchema } from '../../shared/schemas/provisioning.js';
import { callApi, classifyApiError, isConflict, readOrUndefined } from '../../shared/k8s/api-errors.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { applyConditions } from '../../shared/k8s/condition-writer.js';
import type { StatusTarget } from '../../shared/k8s/custom-objects.js';
import { applyStatusDecided } from '../../shared/k8s/status-apply.js';
import { functionManager } from './name.js';

import { conditionFor, conditionsOf, isTrueFor } from '../../shared/k8s/conditions.js';
import { recordEvent } from '../../shared/k8s/events.js';
import {
  jobState,
  createJobOrGetExisting,
  deleteJob,
  podLog,
  podLogTail,
  podsOfJob,
  readJob,
} from '../../shared/k8s/jobs.js';
import { ownershipOf, recordOwned, withRecordedOwnership } from '../../shared/k8s/owned-objects.js';
import {
  ProvisioningCondition,
  provisioningIdentity,
  provisioningRef,
  provisioningTarget,
} from '../../shared/k8s/provisioning.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import type { FunctionContext } from '../../shared/server/types.js';
import { placementOf, type KudJobLaunchConfig } from './config.js';
import { kudNodeName, readOwnJob } from './functions-objects.js';
import { kubeconfigFromLog } from './kubeconfig-publisher/publish.js';

const step = ProvisioningCondition.kubeconfigPublished;

/** KUD installed for this generation and its kubeconfig not settled yet (published, or failed for good). */
export function awaitsKubeconfig(item: StoredObject, now: Date = new Date()): boolean {
  const generation = item.metadata.generation ?? 0;
  const conditions = conditionsOf(item);
  if (item.metadata.deletionTimestamp) return false;
  if (!isTrueFor(conditions, ProvisioningCondition.kudInstalled, generation)) return false;
  const published = conditionFor(conditions, step, generation);
  return (
    published === undefined ||
    published.status === 'Unknown' ||
    (published.status === 'False' && sweepRetries(published, now))
  );
}

/**
 * The published Secret's digest (and name) in status, for whatever generation the Provisioning
 * has now: a fact about the Secret, not a step of one generation. Nothing when it is gone or
 * replaced (another uid).
 */
async function recordKubeconfigDigest(
  clients: KubeClients,
  target: StatusTarget,
  uid: string | undefined,
  digest: Record<string, unknown>,
): Promise<void> {
  await applyStatusDecided(clients, target, functionManager, (fresh) =>
    (uid !== undefined && fresh.metadata.uid !== uid) ||
    Object.entries(digest).every(([field, value]) => fresh.status?.[field] === value)
      ? undefined
      : { conditions: [], fields: digest },
  );
}

const publisherGeneration = (job: V1Job) =>
  Number(job.metadata?.annotations?.[publisherGenerationAnnotation]);

/** Enough for any admin.conf (a few KiB, in base64) and the publisher's own log lines. */
const publisherLogLimitBytes = 256 * 1024;

/**
 * The new cluster's kubeconfig (contract section 10; docs/adr/0009-kubeconfig-publisher.md), one
 * step per call from what the API says: once the KUD Job of this generation succeeded, a short
 * publisher Job in the functions' namespace, pinned to the node the KUD pod ran on (found by the
 * KUD Job's controller uid), prints admin.conf as one framed line, with no API token at all; when
 * it completes, kud-job-launch reads that pod's log, writes `<cluster>-admin-kubeconfig` in the
 * Provisioning's namespace (recorded by uid in status.ownedObjects), deletes the publisher Job
 * (its log goes with its pod), and sets KubeconfigPublished True and status.kubeconfigSecret.
 * Ready does not wait for it: the cluster is installed. Called on the Job updates of the KUD Job
 * and of the publisher, and by the sweep.
 */
export async function advanceKubeconfig(
  context: FunctionContext<KudJobLaunchConfig>,
  clients: KubeClients,
  live: StoredObject,
): Promise<void> {
  if (!awaitsKubeconfig(live)) return;
  const parsed = provisioningSchema.safeParse(live);
  const kudJobName = live.status?.jobName;
  if (!parsed.success || typeof kudJobName !== 'string') return;
  const ref = provisioningRef(live);
  const owner = ownerOf(parsed.data);
  const cluster = parsed.data.metadata.labels.cluster;
  const functionsNamespace = context.config.FUNCTIONS_NAMESPACE;
  const name = kubeconfigPublisherName(cluster);
  const secretName = kubeconfigSecretName(cluster);
  const target = provisioningTarget(ref.namespace, ref.name);
  const report = async (
    status: 'True' | 'False' | 'Unknown',
    reason: ConditionReason,
    message: string,
    fields?: Record<string, unknown>,
  ) => {
    const result = await applyConditions(clients, target, {
      ref,
      conditions: [{ type: step, status, reason, message }],
      ...(fields ? { fields } : {}),
      alreadyDone: (conditions) => {
        const current = conditionFor(conditions, step, ref.generation);
        // Published for this generation: nothing judged on an older read undoes it. Two deliveries
        // of the publisher's completion race; the one that published deletes the Job, and the
        // other then finds the pod gone and would report the publication failed.
        if (current?.status === 'True' && status !== 'True') return true;
        return current?.reason === reason && current.message === message;
      },
      manager: functionManager,
    });
    if (result.outcome === 'written' && status !== 'Unknown')
      await recordEvent(
        clients,
        {
          object: provisioningIdentity(ref),
          type: status === 'True' ? 'Normal' : 'Warning',
          reason,
          message,
          component: context.functionName,
        },
        context.log,
      );
    // The only fields reported are the published Secret's digest and name: facts about the
    // Secret, which holds that admin.conf whatever generation the Provisioning reached meanwhile
    // (a shrink right after a grow makes the step's write stale). Recorded all the same, or the
    // next generation's drain would refuse the Secret for good.
    if (result.outcome === 'stale' && fields) await recordKubeconfigDigest(clients, target, ref.uid, fields);
  };

  const existing = await readJob(clients, functionsNamespace, name);
  if (existing && existing.metadata?.labels?.[managedByLabel] !== managedByValue)
    return report(
      'False',
      Reason.ObjectConflict,
      objectConflictMessage('Job', existing.metadata ?? {}, owner),
    );
  const ours = existing && carriesOwnerUid(existing.metadata, owner.uid) ? existing : undefined;
  if (ours && publisherGeneration(ours) === ref.generation) {
    const state = jobState(ours);
    if (state === 'complete') {
      const pod = newestPod(await podsOfJob(clients, ours));
      let adminConf: string;
      try {
        if (!pod) throw new BpaError('KubeconfigNotInLog', `the pod of Job ${name} is gone`);
        adminConf = kubeconfigFromLog(await podLog(clients, pod, publisherLogLimitBytes));
      } catch (error) {
        if (!(error instanceof BpaError) || error.kind === 'transient') throw error;
        // Run it again: the next step creates a new publisher.
        await deleteJob(clients, ours);
        return report(
          'False',
          Reason.KubeconfigPublishFailed,
          `Job ${name} completed but ${error.message}; the kubeconfig of cluster ${cluster} is not published (the sweep runs the publisher again)`,
        );
      }
      try {
        await writeKubeconfigSecret(clients, live, owner, cluster, adminConf);
      } catch (error) {
        if (error instanceof BpaError && error.reason === Reason.ObjectConflict) {
          // The Secret appeared after launch: the log holding the credential goes all the same.
          await deleteJob(clients, ours);
          return report('False', Reason.ObjectConflict, error.message);
        }
        throw error;
      }
      // The tenant can edit that Secret; what the functions themselves use of it (the drain)
      // is checked against this digest, which only status writers can set.
      const digest = { kubeconfigSecret: secretName, [kubeconfigDigestField]: sha256Hex(adminConf) };
      await report(
        'True',
        Reason.KubeconfigPublished,
        `The kubeconfig of cluster ${cluster} is in Secret ${secretName} (key value)`,
        digest,
      );
      // The credential is in its Secret and its digest in status: the pod whose log also holds
      // it goes now (after a failure before this point, the Job is there for the next try).
      await deleteJob(clients, ours);
      return;
    }
    if (state === 'failed') {
      const pod = newestPod(await podsOfJob(clients, ours));
      // Its log holds its error, never a part of the file (publish.ts).
      const tail = pod ? await podLogTail(clients, pod, { tailLines: 3, maxBytes: 512 }) : undefined;
      return report(
        'False',
        Reason.KubeconfigPublishFailed,
        `Job ${functionsNamespace}/${name} failed, the kubeconfig of cluster ${cluster} is not published${pod ? ` (pod ${pod.metadata?.name})` : ''}${tail ? `: ${tail.trim()}` : ''}`,
      );
    }
    return; // running: its completion is a Job update (or the sweep)
  }
  if (existing) {
    // Published for an older generation (or left by another Provisioning of this cluster name, which
    // only the functions can write there): replaced once it has finished.
    if (jobState(existing) === 'running') return;
    await deleteJob(clients, existing);
  }

  // A Secret of that name that is not ours is a conflict before anything prints the credential:
  // a publisher whose log could never be written anywhere would only expose it.
  // A fresh one a concurrent delivery has not recorded yet is judged again a moment later.
  const refused = await withRecordedOwnership(clients, target, live, async (current) => {
    const error = ownershipError(
      'Secret',
      await readKubeconfigSecret(clients, owner.namespace, secretName),
      ownershipOf(owner, current),
    );
    if (error && error.reason !== Reason.ObjectConflict) throw error;
    return error;
  });
  if (refused) return report('False', Reason.ObjectConflict, refused.message);

  const kudJob = await readOwnJob(clients, functionsNamespace, kudJobName, owner.uid);
  const nodeName = await kudNodeName(clients, live, kudJobName, kudJob);
  if (!nodeName)
    return report(
      'False',
      Reason.KubeconfigUnavailable,
      `The pod of Job ${kudJobName} is gone, so the node holding /opt/kud/multi-cluster/${cluster}/artifacts/admin.conf is not known; the kubeconfig is not published (bpa.akraino.org/retry runs KUD again)`,
    );
  const publisher = buildKubeconfigPublisher(owner, cluster, {
    image: context.config.KUBECONFIG_PUBLISHER_IMAGE,
    nodeName,
    generation: ref.generation,
    functionsNamespace,
    placement: placementOf(context.config),
  });
  try {
    const created = await createJobOrGetExisting(clients, publisher);
    if (!created.created) return; // another delivery created it (or the old one is still being deleted)
    await recordOwned(clients, target, functionManager, owner.uid, [
      { kind: 'Job', metadata: created.job.metadata },
    ]);
  } catch (error) {
    // Refused (RBAC, admission, validation): retrying the same request cannot help.
    const status = error instanceof BpaError ? error.details?.status : undefined;
    if (error instanceof BpaError && (status === 403 || status === 422 || status === 400))
      return report(
        'False',
        Reason.KubeconfigUnavailable,
        `The kubeconfig publisher of cluster ${cluster} was refused: ${error.message}`,
      );
    throw error;
  }
  context.log.info('kubeconfig publisher launched', { jobName: name, nodeName, secret: secretName });
  await report(
    'Unknown',
    Reason.KubeconfigPublishing,
    `Job ${functionsNamespace}/${name} reads admin.conf on node ${nodeName} for Secret ${secretName}`,
  );
}

/**
 * Creates `<cluster>-admin-kubeconfig` in the Provisioning's namespace, or replaces the data of
 * the one whose uid status.ownedObjects records; any other Secret of that name (a look-alike with
 * forged labels and owner reference) is ObjectConflict, untouched.
 */
async function writeKubeconfigSecret(
  clients: KubeClients,
  live: StoredObject,
  owner: ReturnType<typeof ownerOf>,
  cluster: string,
  adminConf: string,
): Promise<void> {
  const namespace = owner.namespace;
  const name = kubeconfigSecretName(cluster);
  const target = provisioningTarget(namespace, owner.name);
  const desired = buildKubeconfigSecret(owner, cluster, adminConf);
  const read = () => readKubeconfigSecret(clients, namespace, name);
  let stored = await read();
  if (!stored) {
    try {
      const created = await clients.core.createNamespacedSecret({ namespace, body: desired });
      await recordOwned(clients, target, functionManager, owner.uid, [
        { kind: 'Secret', metadata: created.metadata },
      ]);
      return;
    } catch (error) {
      if (!isConflict(error)) throw classifyApiError(error, `create Secret ${namespace}/${name}`);
    }
    stored = await read();
  }
  // Created by a concurrent delivery that records its uid next: judged again a moment later.
  await withRecordedOwnership(clients, target, live, (current) => {
    const refused = ownershipError('Secret', stored, ownershipOf(owner, current));
    return refused ? Promise.reject(refused) : Promise.resolve();
  });
  if (!stored) return;
  const value = Buffer.from(adminConf, 'utf8').toString('base64');
  if (stored.data?.[kubeconfigSecretKey] === value) return;
  // The resourceVersion read above: a concurrent writer makes this a 409, retried by the event.
  await callApi(`update Secret ${namespace}/${name}`, () =>
    clients.core.replaceNamespacedSecret({
      namespace,
      name,
      body: { ...stored, data: { ...stored.data, [kubeconfigSecretKey]: value } },
    }),
  );
}

const readKubeconfigSecret = (clients: KubeClients, namespace: string, name: string) =>
  readOrUndefined(`read Secret ${namespace}/${name}`, () =>
    clients.core.readNamespacedSecret({ namespace, name }),
  );
