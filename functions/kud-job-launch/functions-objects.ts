import type { V1Job } from '@kubernetes/client-node';
import { newestPod } from '../../shared/core/job-progress.js';
import { clusterLabel, provisioningUidLabel } from '../../shared/core/names.js';
import { carriesOwnerUid } from '../../shared/core/ownership.js';
import { jobStatusSchema } from '../../shared/schemas/provisioning.js';
import { callApi, classifyApiError, isConflict, isNotFound } from '../../shared/k8s/api-errors.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { deleteJob, podsOfJob, readJob } from '../../shared/k8s/jobs.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';

/**
 * The objects kud-job-launch keeps in the functions' namespace for a Provisioning (the KUD,
 * cleanup and publisher Jobs, the mounted `<cluster>-inventory`; contract section 12, ADR 0013):
 * tied to it by the label `bpa.akraino.org/provisioning-uid`, since owner references cannot cross
 * namespaces. Tenants cannot write there, so that label is trusted there, and only there.
 */

/** A Job of the functions' namespace made for this Provisioning (by its uid label), or undefined. */
export async function readOwnJob(
  clients: KubeClients,
  functionsNamespace: string,
  name: string,
  uid: string,
): Promise<V1Job | undefined> {
  const job = await readJob(clients, functionsNamespace, name);
  return job && carriesOwnerUid(job.metadata, uid) ? job : undefined;
}

const selectorOf = (uid: string, cluster?: string) =>
  `${provisioningUidLabel}=${uid}${cluster ? `,${clusterLabel}=${cluster}` : ''}`;

/**
 * Deletes every Job and ConfigMap of the functions' namespace labelled with this Provisioning's
 * uid (and this cluster name, when given: a rename's old name), each exactly (uid precondition).
 * Returns how many Jobs were still there (being deleted or just deleted): 0 means none is left.
 */
export async function deleteOwnObjects(
  clients: KubeClients,
  functionsNamespace: string,
  uid: string,
  options: { cluster?: string; keepJob?: string } = {},
): Promise<number> {
  const labelSelector = selectorOf(uid, options.cluster);
  const jobs = await callApi(`list the Jobs of Provisioning ${uid} in ${functionsNamespace}`, () =>
    clients.batch.listNamespacedJob({ namespace: functionsNamespace, labelSelector }),
  );
  let left = 0;
  for (const job of jobs.items) {
    if (job.metadata?.name === options.keepJob) continue;
    left++;
    if (!job.metadata?.deletionTimestamp) await deleteJob(clients, job);
  }
  const configMaps = await callApi(
    `list the ConfigMaps of Provisioning ${uid} in ${functionsNamespace}`,
    () => clients.core.listNamespacedConfigMap({ namespace: functionsNamespace, labelSelector }),
  );
  for (const configMap of configMaps.items) {
    const name = configMap.metadata?.name ?? '';
    try {
      await clients.core.deleteNamespacedConfigMap({
        name,
        namespace: functionsNamespace,
        body: { preconditions: { uid: configMap.metadata?.uid } },
      });
    } catch (error) {
      if (!isNotFound(error) && !isConflict(error))
        throw classifyApiError(error, `delete ConfigMap ${functionsNamespace}/${name}`);
    }
  }
  return left;
}

/**
 * The node the KUD pod ran on: its pod (found by the Job's controller uid, never by `job-name`,
 * a label any pod can carry), else what status.job recorded from it. undefined when unknown.
 */
export async function kudNodeName(
  clients: KubeClients,
  live: StoredObject,
  kudJobName: string,
  kudJob: V1Job | undefined,
): Promise<string | undefined> {
  const pod = kudJob ? newestPod(await podsOfJob(clients, kudJob)) : undefined;
  if (pod?.spec?.nodeName) return pod.spec.nodeName;
  const recorded = jobStatusSchema.safeParse(live.status?.job);
  return recorded.success && recorded.data.name === kudJobName ? recorded.data.nodeName : undefined;
}
