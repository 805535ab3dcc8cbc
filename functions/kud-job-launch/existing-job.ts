import type { V1Job } from '@kubernetes/client-node';
import { ownedObjectsOf } from '../../shared/core/ownership.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { readJob } from '../../shared/k8s/jobs.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import { namespacedWatch, type WatchedObjects } from '../../shared/k8s/watched-objects.js';

/** The key of the server's watch of the Jobs in the functions' namespace (FunctionDefinition.watches). */
const jobsKey = 'functions-jobs';

/**
 * kud-job-launch's watch of every Job in its own namespace: its KUD, cleanup and publisher Jobs,
 * and any an operator put there (a Job of a KUD Job's name that the functions did not create must
 * be seen as the read sees it: ObjectConflict, before anything is written).
 */
export const functionsJobsWatch = (functionsNamespace: string) =>
  namespacedWatch({
    key: jobsKey,
    group: 'batch',
    version: 'v1',
    plural: 'jobs',
    namespace: functionsNamespace,
  });

/**
 * The cluster's KUD Job as it stands, for the launch's plan (grow, shrink, or install). From the
 * server's watch when that agrees with the Provisioning as the step has it (at the version its
 * event named): the Job whose uid status.ownedObjects records, or no Job when it records none.
 * Anything else (a Job the status does not know yet, one it records that the watch has not sent,
 * the watch not up) is a read. The first launch of a cluster so costs no read (issue 26 item 4).
 * A Job created or deleted since either shows in the create's 409 or the delete's uid
 * precondition (launch-job.ts), as after a read.
 */
export async function existingKudJob(
  clients: KubeClients,
  watched: WatchedObjects | undefined,
  live: StoredObject,
  namespace: string,
  name: string,
): Promise<V1Job | undefined> {
  const recorded = ownedObjectsOf(live.status).find(
    (owned) => owned.kind === 'Job' && owned.namespace === namespace && owned.name === name,
  )?.uid;
  const seen = watched?.of(jobsKey)?.latest<V1Job>(namespace, name);
  if (seen && seen.object?.metadata?.uid === recorded) return seen.object;
  return readJob(clients, namespace, name);
}
