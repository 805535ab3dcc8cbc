import { hostname } from 'node:os';
import { Reason } from '../../shared/reasons.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { getCustomObject } from '../../shared/k8s/custom-objects.js';
import { applyStatus } from '../../shared/k8s/status-apply.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import type { FunctionContext } from '../../shared/server/types.js';
import type { SoftwareInstallConfig } from './config.js';
import { SoftwareCondition, activeClaim, softwareRef, softwareTarget } from './software-status.js';
import { functionManager } from './name.js';

/** How long an install of `hostCount` hosts may take: the claim's expiry and the Job's deadline. */
export function claimSeconds(config: SoftwareInstallConfig, hostCount: number): number {
  const rounds = Math.max(1, Math.ceil(hostCount / config.SSH_CONCURRENCY));
  const attempt = config.SSH_TIMEOUT_SECONDS + config.SSH_CONNECT_TIMEOUT_SECONDS;
  const retries = config.INSTALL_ATTEMPTS * attempt + config.INSTALL_RETRY_DELAY_SECONDS * 16;
  return rounds * retries + 60;
}

/**
 * Claims this generation: Installed=Unknown (Installing) plus a claim with an expiry, applied as
 * the function's field manager conditional on the read resourceVersion, so a claim is never taken
 * twice: a 409 re-reads, and if someone else claimed it, we step back.
 */
export async function claim(
  context: FunctionContext<SoftwareInstallConfig>,
  clients: KubeClients,
  live: StoredObject,
  hostCount: number,
  retry?: string,
): Promise<StoredObject | undefined> {
  const ref = softwareRef(live);
  const target = softwareTarget(ref.namespace, ref.name);
  const seconds = claimSeconds(context.config, hostCount);
  const message = `Installing on ${hostCount} host${hostCount === 1 ? '' : 's'}`;
  // The apply restates what the function owns, read from managedFields: read whole without them.
  let current: StoredObject | undefined = Array.isArray(live.metadata.managedFields)
    ? live
    : await getCustomObject(clients, target);
  for (let attempt = 1; attempt <= 5 && current; attempt++) {
    if (current.metadata.uid !== ref.uid || current.metadata.generation !== ref.generation) return undefined;
    if (activeClaim(current, ref.generation)) return undefined;
    const result = await applyStatus(clients, target, current, {
      manager: functionManager,
      conditions: [SoftwareCondition.installed, SoftwareCondition.ready].map((type) => ({
        type,
        status: 'Unknown' as const,
        reason: Reason.Installing,
        message,
        observedGeneration: ref.generation,
      })),
      fields: {
        // The Job of this run is named once it exists; an older run's must not be judged meanwhile.
        installJob: undefined,
        // The retry value this run answers: the same value does not re-run it again.
        ...(retry !== undefined ? { retry } : {}),
        claim: {
          generation: ref.generation,
          holder: process.env.HOSTNAME ?? hostname(),
          expiresAt: new Date(Date.now() + seconds * 1000).toISOString(),
        },
      },
    });
    if (result.outcome === 'written') return result.object;
    if (result.outcome === 'gone') return undefined;
    current = await getCustomObject(clients, target);
  }
  return undefined;
}
