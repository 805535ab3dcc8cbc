import type { CloudEvent } from 'cloudevents';
import { describeError, transient } from '../../shared/errors.js';
import { kubeClients } from '../../shared/k8s/clients.js';
import { conditionFor, conditionsOf } from '../../shared/k8s/conditions.js';
import { listInNamespaces } from '../../shared/k8s/custom-objects.js';
import { softwaresResource } from '../../shared/k8s/resources.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import type { FunctionContext } from '../../shared/server/types.js';
import type { SoftwareInstallConfig } from './config.js';
import { installSoftware, retryableReasons } from './install-software.js';
import { SoftwareCondition, activeClaim } from './software-status.js';

/**
 * Needs the sweep: not Ready for its generation, and either never handled (event dropped),
 * waiting for its cluster, stopped on something the world can fix, or claimed by a process
 * whose claim expired. Failed installs wait for a spec change: no silent retry loop.
 */
export function needsInstall(item: StoredObject, now = new Date()): boolean {
  const generation = item.metadata.generation ?? 0;
  const conditions = conditionsOf(item);
  if (conditionFor(conditions, SoftwareCondition.ready, generation)?.status === 'True') return false;
  const installed = conditionFor(conditions, SoftwareCondition.installed, generation);
  if (!installed) return true;
  if (installed.status === 'True') return false;
  if (installed.status === 'False') return retryableReasons.has(installed.reason ?? '');
  return activeClaim(item, generation, now) === undefined;
}

/** Collects the outcome events of installing several Softwares: the first is the reply, the rest are sent. */
export async function announce(
  context: FunctionContext<SoftwareInstallConfig>,
  events: CloudEvent<unknown>[],
): Promise<CloudEvent<unknown> | undefined> {
  const [first, ...rest] = events;
  for (const event of rest) await context.send(event as CloudEvent);
  return first;
}

/** The periodic sweep over every Software in every namespace; events go to the broker. */
export async function sweep(context: FunctionContext<SoftwareInstallConfig>): Promise<void> {
  const clients = kubeClients(context.kubeConfig);
  const items = (await listInNamespaces(clients, softwaresResource, context.config.SWEEP_NAMESPACES)).filter(
    (item) => needsInstall(item),
  );
  const failed: string[] = [];
  let sent = 0;
  for (const item of items) {
    const where = `${item.metadata.namespace}/${item.metadata.name}`;
    try {
      const outcome = await installSoftware(context, clients, item);
      if ('event' in outcome && outcome.event) {
        await context.send(outcome.event as CloudEvent);
        sent++;
      }
    } catch (error) {
      failed.push(where);
      context.log.warn('sweep could not install a Software', {
        software: where,
        error: describeError(error).message,
      });
    }
  }
  context.log.info('sweep done', { softwares: items.length, sent, failed: failed.length });
  if (failed.length > 0)
    throw transient(
      'SweepIncomplete',
      `The sweep could not handle ${failed.length} Software(s): ${failed.join(', ')}`,
    );
}
