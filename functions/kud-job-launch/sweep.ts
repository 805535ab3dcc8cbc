import type { CloudEvent } from 'cloudevents';
import { describeError, transient } from '../../shared/errors.js';
import { kubeClients } from '../../shared/k8s/clients.js';
import { conditionFor, conditionsOf, isTrueFor } from '../../shared/k8s/conditions.js';
import { listInNamespaces } from '../../shared/k8s/custom-objects.js';
import { readJob } from '../../shared/k8s/jobs.js';
import { ProvisioningCondition } from '../../shared/k8s/provisioning.js';
import { provisioningsResource } from '../../shared/k8s/resources.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
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
export async function sweep(context: FunctionContext<KudJobLaunchConfig>): Promise<void> {
  const clients = kubeClients(context.kubeConfig);
  const items = (
    await listInNamespaces(clients, provisioningsResource, context.config.SWEEP_NAMESPACES)
  ).filter(awaitsCompletion);
  const failed: string[] = [];
  let sent = 0;
  for (const item of items) {
    const where = `${item.metadata.namespace}/${item.metadata.name}`;
    try {
      const job = await readJob(clients, item.metadata.namespace ?? '', String(item.status?.jobName));
      if (!job) continue;
      const event = await completeJob(context, clients, item, job);
      if (!event) continue;
      await context.send(event as CloudEvent);
      sent++;
    } catch (error) {
      failed.push(where);
      context.log.warn('sweep could not finish a Job', {
        provisioning: where,
        error: describeError(error).message,
      });
    }
  }
  context.log.info('sweep done', { waiting: items.length, sent, failed: failed.length });
  if (failed.length > 0)
    throw transient(
      'SweepIncomplete',
      `The sweep could not finish ${failed.length} Job(s): ${failed.join(', ')}`,
    );
}
