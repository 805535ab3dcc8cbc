import { isIP } from 'node:net';
import type { Logger } from '../../shared/log.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { listCustomObjects } from '../../shared/k8s/custom-objects.js';
import { recordEvent } from '../../shared/k8s/events.js';
import { softwaresResource } from '../../shared/k8s/resources.js';
import { applyStatusDecided } from '../../shared/k8s/status-apply.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import { softwareIdentity, softwareRef, softwareTarget } from './software-status.js';
import { functionManager, functionName } from './name.js';

/**
 * The by-hand controls of a Software (contract section 11). Each is acted on once per value:
 * status records the value handled, so a new value (not a lasting annotation) is the request.
 * - `bpa.akraino.org/retry: <any new value>` re-runs a failed install for the current generation.
 * - `bpa.akraino.org/forget-host-keys: "<ip>[,<ip>...]"` drops the pinned host keys of those
 *   (reimaged) hosts from every Software of the cluster, with a Normal Event, and re-runs the
 *   install; nothing else ever replaces a pinned key.
 */
export const retryAnnotation = 'bpa.akraino.org/retry';
export const forgetHostKeysAnnotation = 'bpa.akraino.org/forget-host-keys';

const annotation = (object: StoredObject, name: string) => {
  const value = object.metadata.annotations?.[name]?.trim();
  return value ? value : undefined;
};
const handled = (object: StoredObject, field: string) =>
  typeof object.status?.[field] === 'string' ? (object.status[field] as string) : undefined;

/** The retry value not handled yet, if any. */
export function pendingRetry(object: StoredObject): string | undefined {
  const value = annotation(object, retryAnnotation);
  return value !== undefined && value !== handled(object, 'retry') ? value : undefined;
}

export type ForgetRequest = { value: string; ips: string[]; invalid: string[] };

/** The forget-host-keys value not handled yet: its IP addresses, and the words that are not IPs. */
export function pendingForget(object: StoredObject): ForgetRequest | undefined {
  const value = annotation(object, forgetHostKeysAnnotation);
  if (value === undefined || value === handled(object, 'hostKeysForgotten')) return undefined;
  const words = value
    .split(',')
    .map((word) => word.trim())
    .filter((word) => word !== '');
  return {
    value,
    ips: words.filter((word) => isIP(word) !== 0),
    invalid: words.filter((word) => isIP(word) === 0),
  };
}

/** Pure: status.hosts without the pinned keys of `ips`. */
export function withoutPinnedKeys(hosts: unknown, ips: ReadonlySet<string>): unknown {
  if (!Array.isArray(hosts)) return hosts;
  return hosts.map((host: unknown) => {
    if (typeof host !== 'object' || host === null) return host;
    const { hostKeyFingerprint: _dropped, ...rest } = host as Record<string, unknown>;
    return ips.has(String(rest.ip)) ? rest : host;
  });
}

/**
 * Drops the pinned keys of the requested hosts from every Software of the cluster in the
 * namespace (trust on first use pins them across Softwares), records the value as handled on
 * this Software and reports it as a Normal Event. Returns this Software as now stored.
 */
export async function forgetHostKeys(
  clients: KubeClients,
  software: StoredObject,
  cluster: string,
  request: ForgetRequest,
  log: Logger,
): Promise<StoredObject | undefined> {
  const ref = softwareRef(software);
  const ips = new Set(request.ips);
  const siblings = await listCustomObjects(clients, softwaresResource, {
    namespace: ref.namespace,
    labelSelector: `cluster=${cluster}`,
  });
  for (const sibling of siblings) {
    if (sibling.metadata.uid === software.metadata.uid) continue;
    await applyStatusDecided(
      clients,
      softwareTarget(ref.namespace, sibling.metadata.name),
      functionManager,
      (fresh) => {
        const hosts = withoutPinnedKeys(fresh.status?.hosts, ips);
        return JSON.stringify(hosts) === JSON.stringify(fresh.status?.hosts)
          ? undefined
          : { conditions: [], fields: { hosts } };
      },
      { first: sibling },
    );
  }
  const result = await applyStatusDecided(
    clients,
    softwareTarget(ref.namespace, ref.name),
    functionManager,
    (fresh) => ({
      conditions: [],
      fields: {
        // Absent stays absent (a status without hosts gets none).
        ...(fresh.status?.hosts !== undefined ? { hosts: withoutPinnedKeys(fresh.status.hosts, ips) } : {}),
        hostKeysForgotten: request.value,
      },
    }),
    { first: software },
  );
  const ignored =
    request.invalid.length > 0 ? `; ignored (not IP addresses): ${request.invalid.join(', ')}` : '';
  const message =
    request.ips.length > 0
      ? `Forgot the pinned host keys of ${request.ips.join(', ')} (${forgetHostKeysAnnotation}); their next key is trusted on first use${ignored}`
      : `Nothing to forget: ${forgetHostKeysAnnotation} names no IP address${ignored}`;
  await recordEvent(
    clients,
    {
      object: softwareIdentity(ref),
      type: 'Normal',
      reason: 'HostKeysForgotten',
      message,
      component: functionName,
    },
    log,
  );
  log.info('host keys forgotten', { ips: request.ips, invalid: request.invalid });
  return result.outcome === 'gone' ? undefined : result.object;
}
