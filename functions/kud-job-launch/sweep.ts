import { conditionFor, conditionsOf, isTrueFor } from '../../shared/k8s/conditions.js';
import { readJob } from '../../shared/k8s/jobs.js';
import { ProvisioningCondition } from '../../shared/k8s/provisioning.js';
import { provisioningsResource } from '../../shared/k8s/resources.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import { runSweep } from '../../shared/k8s/sweep.js';
import type { FunctionContext } from '../../shared/server/types.js';
import { completeJob } from './complete-job.js';
import type { KudJobLaunchConfig } from './config.js';

/** Launched for its generation, completion not recorded yet: the Job may have finished unseen. */
export function awaitsCompletion(item: StoredObject): boolean {
  const generation = item.metadata.generation ?? 0;
  const conditions = conditionsOf(item);
  return (
    isTrueFor(conditions, ProvisioningCondition.jobLaunched, generation) &&
    conditionFor(conditions, ProvisioningCondition.kudInstalled, generation) === undefined &&
    typeof item.status?.jobName === 'string'
  );
}

/**
 * The sweep's part here: Jobs whose completion event was dropped. Every Provisioning waiting
 * on its Job gets the Job read; a finished one is completed and its event sent to the broker.
 */
export function sweep(context: FunctionContext<KudJobLaunchConfig>): Promise<void> {
  return runSweep(context, {
    resource: provisioningsResource,
    kind: 'Provisioning',
    select: awaitsCompletion,
    redrive: async (item, clients) => {
      const job = await readJob(clients, item.metadata.namespace ?? '', String(item.status?.jobName));
      return job ? completeJob(context, clients, item, job) : undefined;
    },
  });
}
