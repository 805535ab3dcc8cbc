import {
  RbacAuthorizationV1Api,
  type KubeConfig,
  type V1Job,
  type V1ObjectMeta,
} from '@kubernetes/client-node';
import { newestPod } from '../../shared/core/job-progress.js';
import { kubeconfigPublisherName, kubeconfigSecretName } from '../../shared/core/lifecycle-names.js';
import {
  buildKubeconfigPublisher,
  publisherGenerationAnnotation,
} from '../../shared/core/lifecycle-objects.js';
import { isOwnedBy, objectConflictMessage, ownershipConflict } from '../../shared/core/ownership.js';
import { ownerOf } from '../../shared/core/render.js';
import { BpaError } from '../../shared/errors.js';
import { Reason, sweepRetries } from '../../shared/reasons.js';
import { provisioningSchema } from '../../shared/schemas/provisioning.js';
import { callApi, classifyApiError, isConflict, readOrUndefined } from '../../shared/k8s/api-errors.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { writeConditions } from '../../shared/k8s/condition-writer.js';
import { conditionFor, conditionsOf, isTrueFor } from '../../shared/k8s/conditions.js';
import { recordEvent } from '../../shared/k8s/events.js';
import { jobState, createJobOrGetExisting, deleteJob, readJob } from '../../shared/k8s/jobs.js';
import {
  ProvisioningCondition,
  provisioningIdentity,
  provisioningRef,
  provisioningTarget,
} from '../../shared/k8s/provisioning.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import type { FunctionContext } from '../../shared/server/types.js';
import type { KudJobLaunchConfig } from './config.js';

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

const rbacClients = new WeakMap<KubeConfig, RbacAuthorizationV1Api>();
const rbacOf = (kubeConfig: KubeConfig) => {
  let api = rbacClients.get(kubeConfig);
  if (!api) rbacClients.set(kubeConfig, (api = kubeConfig.makeApiClient(RbacAuthorizationV1Api)));
  return api;
};

const publisherGeneration = (job: V1Job) =>
  Number(job.metadata?.annotations?.[publisherGenerationAnnotation]);

/**
 * The new cluster's kubeconfig (contract section 10), one step per call from what the API says:
 * once the KUD Job of this generation succeeded, the publisher (an empty Secret
 * `<cluster>-admin-kubeconfig`, a ServiceAccount whose Role may get and update only it, and a
 * short Job pinned to the node the KUD pod ran on; docs/adr/0009-kubeconfig-publisher.md) copies
 * KUD's admin.conf into the Secret; when that Job completes, KubeconfigPublished True and
 * status.kubeconfigSecret names the Secret. Ready does not wait for it: the cluster is installed.
 * Called on the Job updates of the KUD Job and of the publisher, and by the sweep.
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
  const name = kubeconfigPublisherName(cluster);
  const secretName = kubeconfigSecretName(cluster);
  const target = provisioningTarget(ref.namespace, ref.name);
  const report = async (
    status: 'True' | 'False' | 'Unknown',
    reason: string,
    message: string,
    fields?: Record<string, unknown>,
  ) => {
    const result = await writeConditions(clients, target, ref, {
      conditions: [{ type: step, status, reason, message }],
      ...(fields ? { fields } : {}),
      alreadyDone: (conditions) => {
        const current = conditionFor(conditions, step, ref.generation);
        return current?.reason === reason && current.message === message;
      },
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
  };

  const existing = await readJob(clients, ref.namespace, name);
  if (existing && !isOwnedBy(existing.metadata, owner))
    return report(
      'False',
      Reason.ObjectConflict,
      objectConflictMessage('Job', existing.metadata ?? {}, owner),
    );
  if (existing && publisherGeneration(existing) === ref.generation) {
    const state = jobState(existing);
    if (state === 'complete')
      return report(
        'True',
        Reason.KubeconfigPublished,
        `The kubeconfig of cluster ${cluster} is in Secret ${secretName} (key value)`,
        { kubeconfigSecret: secretName },
      );
    if (state === 'failed') {
      const pod = newestPod(
        (
          await callApi(`list the pods of Job ${ref.namespace}/${name}`, () =>
            clients.core.listNamespacedPod({ namespace: ref.namespace, labelSelector: `job-name=${name}` }),
          )
        ).items,
      )?.metadata?.name;
      return report(
        'False',
        Reason.KubeconfigPublishFailed,
        `Job ${name} failed, the kubeconfig of cluster ${cluster} is not published; check pod logs${pod ? ` (pod ${pod})` : ''}`,
      );
    }
    return; // running: its completion is a Job update (or the sweep)
  }
  if (existing) {
    // Published for an older generation: replaced once it has finished.
    if (jobState(existing) === 'running') return;
    await deleteJob(clients, existing);
  }

  const pods = await callApi(`list the pods of Job ${ref.namespace}/${kudJobName}`, () =>
    clients.core.listNamespacedPod({ namespace: ref.namespace, labelSelector: `job-name=${kudJobName}` }),
  );
  const nodeName = newestPod(pods.items)?.spec?.nodeName;
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
  });
  const rbac = rbacOf(clients.kubeConfig);
  const namespace = ref.namespace;
  try {
    await createOwned(
      'Secret',
      owner,
      () => clients.core.createNamespacedSecret({ namespace, body: publisher.secret }),
      () => clients.core.readNamespacedSecret({ namespace, name: secretName }),
    );
    await createOwned(
      'ServiceAccount',
      owner,
      () => clients.core.createNamespacedServiceAccount({ namespace, body: publisher.serviceAccount }),
      () => clients.core.readNamespacedServiceAccount({ namespace, name }),
    );
    await createOwned(
      'Role',
      owner,
      () => rbac.createNamespacedRole({ namespace, body: publisher.role }),
      () => rbac.readNamespacedRole({ namespace, name }),
    );
    await createOwned(
      'RoleBinding',
      owner,
      () => rbac.createNamespacedRoleBinding({ namespace, body: publisher.roleBinding }),
      () => rbac.readNamespacedRoleBinding({ namespace, name }),
    );
    const created = await createJobOrGetExisting(clients, publisher.job);
    if (!created.created) return; // another delivery created it (or the old one is still being deleted)
  } catch (error) {
    if (error instanceof BpaError && error.reason === Reason.ObjectConflict)
      return report('False', Reason.ObjectConflict, error.message);
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
    `Job ${name} copies admin.conf from node ${nodeName} into Secret ${secretName}`,
  );
}

/**
 * Reads an object of the publisher and creates it when absent (a 409 of a concurrent delivery
 * reads again); one that exists is accepted only when it is ours: never adopt.
 */
async function createOwned(
  kind: string,
  owner: ReturnType<typeof ownerOf>,
  create: () => Promise<unknown>,
  read: () => Promise<{ metadata?: V1ObjectMeta }>,
): Promise<void> {
  const what = `${kind} for ${owner.namespace}/${owner.name}`;
  const readIt = () => readOrUndefined(`read ${what}`, read);
  let stored = await readIt();
  if (!stored) {
    try {
      await create();
      return;
    } catch (error) {
      if (!isConflict(error)) throw classifyApiError(error, `create ${what}`);
    }
    stored = await readIt();
  }
  const conflict = ownershipConflict(kind, stored, owner);
  if (conflict) throw new BpaError(Reason.ObjectConflict, conflict);
}
