import type { Condition } from '../../shared/schemas/kube.js';
import { conditionFor } from '../../shared/k8s/conditions.js';
import { ProvisioningCondition } from '../../shared/k8s/provisioning.js';
import { sweepRetries } from '../../shared/reasons.js';

/**
 * What the sweep does for one Provisioning of generation `generation`:
 * - resolve: hosts never resolved for this generation (the add/update event was dropped), or
 *   resolution failed on something the world can fix (a host or lease that appears later);
 * - render: hosts resolved but no inventory yet: send hosts.resolved again;
 * - launch: inventory rendered but no Job launched (or a running older Job blocked it): send
 *   inventory.rendered again;
 * - none: Ready, in progress (the Job runs; kud-job-launch's own sweep finishes it), or failed
 *   for a reason only a spec change can fix (a new generation re-runs the chain), or refused by
 *   the API server less than an hour ago (shared/reasons.ts, `hourly`).
 */
export type SweepStep = 'resolve' | 'render' | 'launch' | 'none';

export function nextStep(
  conditions: readonly Condition[],
  generation: number,
  now: Date = new Date(),
): SweepStep {
  const at = (type: string) => conditionFor(conditions, type, generation);
  if (at(ProvisioningCondition.ready)?.status === 'True') return 'none';
  if (at(ProvisioningCondition.kudInstalled)) return 'none';
  const launched = at(ProvisioningCondition.jobLaunched);
  if (launched?.status === 'True') return 'none';
  const hosts = at(ProvisioningCondition.hostsResolved);
  if (!hosts || hosts.status === 'Unknown') return 'resolve';
  if (hosts.status !== 'True')
    return hosts.status === 'False' && sweepRetries(hosts, now) ? 'resolve' : 'none';
  const inventory = at(ProvisioningCondition.inventoryRendered);
  if (inventory?.status === 'False' && !sweepRetries(inventory, now)) return 'none';
  if (inventory?.status !== 'True') return 'render';
  // A refused Job (JobRefused) is tried again at most hourly, never each sweep.
  if (launched?.status === 'False' && !sweepRetries(launched, now)) return 'none';
  return 'launch';
}
