/**
 * What a node would do with software-install's install Jobs, for the suites whose SSH hosts listen
 * on this machine's loopback, which no Job's pod reaches: each new install Job's own entry point
 * code (functions/software-install/install-job/run.ts, what install-job/main.ts runs) is run in
 * this process with the Job's args and env, authenticated as the Job's ServiceAccount (a bound
 * token from the TokenRequest API, as a pod's projected token), so the Job's Role is what it
 * may do. An imitation of the kubelet, said here: the Job's pod runs for real on a node in
 * test/integration/node/software-job.test.ts.
 */
import { parseArgs } from 'node:util';
import { BatchV1Api, KubeConfig, type V1Job } from '@kubernetes/client-node';
import { softwareInstallConfigSchema } from '../../functions/software-install/config.js';
import {
  componentLabel,
  installJobComponent,
} from '../../functions/software-install/install-job/job-objects.js';
import {
  installJobArgsSchema,
  runInstallJob,
  type InstallJobArgs,
  type InstallJobOutcome,
} from '../../functions/software-install/install-job/run.js';
import { silentLogger, type Logger } from '../../shared/log.js';
import { asServiceAccount } from './service-account-kubeconfig.js';

export interface InstallJobRun {
  job: string;
  args: InstallJobArgs;
  outcome: InstallJobOutcome;
}

/** The Job's pod's arguments and env, as the container would get them. */
export function installJobInvocation(job: V1Job): { args: InstallJobArgs; env: Record<string, string> } {
  const container = job.spec?.template.spec?.containers[0];
  const { values } = parseArgs({
    args: container?.args ?? [],
    options: { namespace: { type: 'string' }, name: { type: 'string' }, generation: { type: 'string' } },
  });
  return {
    args: installJobArgsSchema.parse(values),
    env: Object.fromEntries((container?.env ?? []).map((e) => [e.name, e.value ?? ''])),
  };
}

/**
 * Runs every install Job of `namespaces` not run yet (by uid, in `ran`), one after the other, to
 * its end; returns what each did. A Job whose run throws (its pod would exit 1) rejects.
 */
export async function runInstallJobs(
  admin: KubeConfig,
  ran: Set<string>,
  namespaces: readonly string[],
  log: Logger = silentLogger,
): Promise<InstallJobRun[]> {
  const batch = admin.makeApiClient(BatchV1Api);
  const jobs: V1Job[] = [];
  for (const namespace of namespaces)
    jobs.push(
      ...(
        await batch.listNamespacedJob({
          namespace,
          labelSelector: `${componentLabel}=${installJobComponent}`,
        })
      ).items,
    );
  const runs: InstallJobRun[] = [];
  for (const job of jobs) {
    const uid = job.metadata?.uid ?? '';
    if (ran.has(uid)) continue;
    ran.add(uid);
    const namespace = job.metadata?.namespace ?? '';
    const { args, env } = installJobInvocation(job);
    const kubeConfig = await asServiceAccount(
      admin,
      namespace,
      job.spec?.template.spec?.serviceAccountName ?? '',
      new KubeConfig(),
    );
    const outcome = await runInstallJob(
      {
        kubeConfig,
        config: softwareInstallConfigSchema.parse(env),
        log,
        instance: `${job.metadata?.name}-pod`,
      },
      args,
    );
    runs.push({ job: job.metadata?.name ?? '', args, outcome });
  }
  return runs;
}
