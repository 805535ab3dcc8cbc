import type { V1Job } from '@kubernetes/client-node';
import type { CloudEvent } from 'cloudevents';
import type { Logger } from '../../shared/log.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { conditionFor, conditionsOf } from '../../shared/k8s/conditions.js';
import { getCustomObject } from '../../shared/k8s/custom-objects.js';
import { jobFailedCondition, jobState, readJob } from '../../shared/k8s/jobs.js';
import { isOwned } from '../../shared/k8s/install-owned-objects.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import { Reason } from '../../shared/reasons.js';
import { softwareGenerationLabel } from './install-job/job-objects.js';
import { SoftwareCondition, failSoftware, softwareTarget } from './software-status.js';

/**
 * An install Job records its outcome on the Software's status before it exits 0. One that ends
 * without doing so (its pods crashed backoffLimit+1 times, it ran past its deadline, someone
 * deleted it) would leave the Software Installing for good: software-install (on the Job's
 * Software update, or the sweep) reads the Job that status names and records the failure.
 */
export type InstallJobVerdict =
  | { kind: 'running' }
  | { kind: 'ended'; job: string; reason: typeof Reason.InstallJobFailed; message: string };

/** The install Job status names for a generation still Installing; undefined: nothing to judge. */
export function pendingInstallJob(live: StoredObject): string | undefined {
  const generation = live.metadata.generation ?? 0;
  const job = live.status?.installJob;
  if (typeof job !== 'string' || job === '') return undefined;
  const installed = conditionFor(conditionsOf(live), SoftwareCondition.installed, generation);
  return installed?.status === 'Unknown' && installed.reason === Reason.Installing ? job : undefined;
}

/** The Job's own words for how it ended, for the Software's Installed and Ready conditions. */
export function endedJobMessage(job: V1Job, name: string): string {
  const failed = jobFailedCondition(job);
  const logs = `kubectl -n ${job.metadata?.namespace ?? ''} logs job/${name}`;
  if (!failed)
    return `Install Job ${name} completed without recording an outcome on the Software; see ${logs}`;
  const why = `${failed.reason ?? 'Failed'}: ${failed.message ?? 'the Job failed'}`;
  if (failed.reason === 'DeadlineExceeded')
    return `Install Job ${name} ran past its deadline of ${job.spec?.activeDeadlineSeconds ?? '?'} s without recording an outcome (${why}); see ${logs}`;
  if (failed.reason === 'BackoffLimitExceeded')
    return `Install Job ${name} failed: its pod failed ${job.status?.failed ?? '?'} times without recording an outcome (${why}); see ${logs}`;
  return `Install Job ${name} failed without recording an outcome (${why}); see ${logs}`;
}

/** Reads the pending install Job: still running, or ended without an outcome (with why). */
export async function judgeInstallJob(
  clients: KubeClients,
  live: StoredObject,
  name: string,
): Promise<InstallJobVerdict | undefined> {
  const namespace = live.metadata.namespace ?? '';
  const job = await readJob(clients, namespace, name);
  const ended = (message: string): InstallJobVerdict => ({
    kind: 'ended',
    job: name,
    reason: Reason.InstallJobFailed,
    message,
  });
  if (!job) return ended(`Install Job ${name} is gone and recorded no outcome on the Software`);
  // Ours only by the uid recorded when it was created (status.ownedObjects): a look-alike of that
  // name (a tenant's, another Software's, another generation's) is not judged.
  const owned = isOwned(live, { kind: 'Job', namespace, name, uid: job.metadata?.uid ?? '' });
  const generation = job.metadata?.labels?.[softwareGenerationLabel];
  if (!owned || generation !== String(live.metadata.generation ?? 0)) return undefined;
  if (jobState(job) === 'running') return { kind: 'running' };
  return ended(endedJobMessage(job, name));
}

/**
 * Records an install Job that ended without an outcome: Installed and Ready False
 * (InstallJobFailed, the Job's own reason in the message), announced once (announcedJob), and
 * re-run only by `bpa.akraino.org/retry` (the Job's backoffLimit was its retries). Undefined:
 * nothing to record (its outcome came meanwhile, or another delivery recorded it).
 */
export async function failEndedJob(
  clients: KubeClients,
  live: StoredObject,
  verdict: Extract<InstallJobVerdict, { kind: 'ended' }>,
  log: Logger,
): Promise<CloudEvent<unknown> | undefined> {
  // Read again: the Job's pod writes before it exits, so once its Job has ended, a fresh read
  // that still says Installing is the last word (a listed copy may predate the pod's write).
  const fresh = await getCustomObject(
    clients,
    softwareTarget(live.metadata.namespace ?? '', live.metadata.name),
  );
  if (!fresh || pendingInstallJob(fresh) !== verdict.job) return undefined;
  log.warn('install job ended without recording an outcome', { job: verdict.job, message: verdict.message });
  return failSoftware(clients, fresh, { reason: verdict.reason, message: verdict.message }, log, undefined, {
    announcedJob: verdict.job,
  });
}
