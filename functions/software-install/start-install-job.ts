import { createHash } from 'node:crypto';
import type { CloudEvent } from 'cloudevents';
import { BpaError } from '../../shared/errors.js';
import type { Logger } from '../../shared/log.js';
import { Reason } from '../../shared/reasons.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { applyConditions } from '../../shared/k8s/condition-writer.js';
import { recordEvent } from '../../shared/k8s/events.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import type { FunctionContext } from '../../shared/server/types.js';
import { claimSeconds } from './claim.js';
import type { SoftwareInstallConfig } from './config.js';
import { launchInstallJob } from './launch-install-job.js';
import {
  SoftwareCondition,
  failSoftware,
  softwareIdentity,
  softwareRef,
  softwareTarget,
} from './software-status.js';
import { functionManager, functionName } from './name.js';

/** A claimed generation handed to its install Job: 'waiting' for the Job's outcome, or 'failed' at once. */
export type StartOutcome = { kind: 'waiting' } | { kind: 'failed'; event?: CloudEvent<unknown> };

/** A short id of what makes a re-run of the same generation (retry value, forgotten keys, nodes). */
export const runIdOf = (inputs: unknown): string =>
  createHash('sha256').update(JSON.stringify(inputs)).digest('hex').slice(0, 8);

/**
 * Creates the install Job of a claimed generation (contract section 11: installs run in Jobs,
 * never in the request) and records that it runs: Installed and Ready Unknown (Installing,
 * naming the Job), status.installJob, a Normal Event. The Job writes the outcome itself.
 */
export async function startInstallJob(
  context: FunctionContext<SoftwareInstallConfig>,
  clients: KubeClients,
  claimed: StoredObject,
  run: { cluster: string; hostCount: number; runId: string; knownHosts: string | undefined; log: Logger },
): Promise<StartOutcome> {
  const { log, hostCount } = run;
  const ref = softwareRef(claimed);
  let jobName: string;
  try {
    jobName = await launchInstallJob(
      context.config,
      clients,
      claimed,
      run.runId,
      context.config.INSTALL_JOB_DEADLINE_SECONDS || claimSeconds(context.config, hostCount),
      run.knownHosts,
    );
  } catch (error) {
    // A look-alike ServiceAccount, Role, RoleBinding or Job in the way: touched nothing, no Job.
    if (!(error instanceof BpaError) || error.reason !== Reason.ObjectConflict) throw error;
    log.warn('an object of the install run is not ours; no install Job', { message: error.message });
    return {
      kind: 'failed',
      event: await failSoftware(clients, claimed, { reason: error.reason, message: error.message }, log),
    };
  }
  const message = `Installing on ${hostCount} host${hostCount === 1 ? '' : 's'} in Job ${jobName}`;
  // Read again before the apply: recording the run's objects (status.ownedObjects) wrote since the claim.
  await applyConditions(clients, softwareTarget(ref.namespace, ref.name), {
    ref,
    conditions: [
      { type: SoftwareCondition.installed, status: 'Unknown', reason: Reason.Installing, message },
      { type: SoftwareCondition.ready, status: 'Unknown', reason: Reason.Installing, message },
    ],
    fields: { installJob: jobName },
    manager: functionManager,
  });
  await recordEvent(
    clients,
    {
      object: softwareIdentity(ref),
      type: 'Normal',
      reason: 'InstallJobCreated',
      message,
      component: functionName,
    },
    log,
  );
  log.info('install job created', { cluster: run.cluster, job: jobName, hosts: hostCount });
  return { kind: 'waiting' };
}
