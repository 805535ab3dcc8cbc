import type { CloudEvent } from 'cloudevents';
import { conditionFor, conditionsOf } from '../../shared/k8s/conditions.js';
import { softwaresResource } from '../../shared/k8s/resources.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import { runSweep } from '../../shared/k8s/sweep.js';
import type { FunctionContext } from '../../shared/server/types.js';
import type { SoftwareInstallConfig } from './config.js';
import { installSoftware } from './install-software.js';
import { retriedBySweep } from '../../shared/reasons.js';
import { SoftwareCondition, activeClaim } from './software-status.js';
import { pendingInstallJob } from './install-job-state.js';

/**
 * Needs the sweep: not Ready for its generation, and either never handled (event dropped),
 * waiting for its cluster, stopped on something the world can fix, or claimed by a process
 * whose claim expired, or installing in a Job (which may have ended without an outcome). Failed
 * installs wait for a spec change or the retry annotation: no silent retry loop.
 */
export function needsInstall(item: StoredObject, now = new Date()): boolean {
  const generation = item.metadata.generation ?? 0;
  const conditions = conditionsOf(item);
  if (conditionFor(conditions, SoftwareCondition.ready, generation)?.status === 'True') return false;
  const installed = conditionFor(conditions, SoftwareCondition.installed, generation);
  if (!installed) return true;
  if (installed.status === 'True') return false;
  if (installed.status === 'False') return retriedBySweep(installed.reason);
  // An install Job is checked on every sweep: one that ended without recording an outcome
  // (crashed pods, its deadline) fails the Software instead of leaving it Installing.
  if (pendingInstallJob(item)) return true;
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

/** The sweep's part here: every Software that needs installing (needsInstall) is installed. */
export function sweep(context: FunctionContext<SoftwareInstallConfig>): Promise<void> {
  return runSweep(context, {
    resource: softwaresResource,
    kind: 'Software',
    select: (item) => needsInstall(item),
    redrive: async (item, clients) => {
      const outcome = await installSoftware(context, clients, item);
      return 'event' in outcome ? outcome.event : undefined;
    },
  });
}
