import type { BareMetalHost } from '../schemas/bare-metal-host.js';

/**
 * Contract section 13: KUD runs only on hosts Metal3 has finished with. A host is ready when its
 * `status.provisioning.state` is `provisioned` (Metal3 wrote the image and booted it) or
 * `externally provisioned` (its OS was installed by someone else and Metal3 only manages it);
 * any other state is waited for, and one of Metal3's error states stops the Provisioning with
 * Metal3's own message. The IPs are read only once every host is ready: an address from
 * inspection may change once the installed OS boots.
 */

/** What Metal3 says of one host's progress (status fields of a BareMetalHost). */
export interface Metal3HostState {
  state?: string;
  operationalStatus?: string;
  errorType?: string;
  errorMessage?: string;
}

/** Metal3's states (metal3.io/v1alpha1 ProvisioningState) after which a host runs its OS. */
export const provisionedStates: ReadonlySet<string> = new Set(['provisioned', 'externally provisioned']);

/** The Metal3 fields of a host's status, or undefined when it has none of them. */
export function metal3StateOf(host: BareMetalHost): Metal3HostState | undefined {
  const status = host.status;
  if (!status) return undefined;
  const found: Metal3HostState = {};
  const state = status.provisioning?.state;
  if (state) found.state = state;
  if (status.operationalStatus) found.operationalStatus = status.operationalStatus;
  if (status.errorType) found.errorType = status.errorType;
  if (status.errorMessage) found.errorMessage = status.errorMessage;
  return Object.keys(found).length > 0 ? found : undefined;
}

export type HostReadiness =
  { kind: 'ready' } | { kind: 'waiting'; state: string } | { kind: 'error'; message: string };

/**
 * One host: an error first (Metal3 sets errorType, and operationalStatus `error`, whatever the
 * state; a provisioned host with a power management error is not one to install on), then the
 * state. `host` is `<namespace>/<name>`, for the message.
 */
export function hostReadiness(host: string, metal3: Metal3HostState | undefined): HostReadiness {
  if (metal3?.errorType || metal3?.operationalStatus === 'error') {
    const what = metal3.errorType || 'error';
    const words = metal3.errorMessage ? `: ${metal3.errorMessage}` : '';
    return { kind: 'error', message: `BareMetalHost ${host} is in Metal3's ${what}${words}` };
  }
  const state = metal3?.state;
  if (state && provisionedStates.has(state)) return { kind: 'ready' };
  return { kind: 'waiting', state: state || 'no provisioning state yet' };
}

/** How many hosts a message names before "and N more": a condition message stays short. */
const namedInMessage = 10;

export type ProvisioningVerdict =
  | { kind: 'ready' }
  | { kind: 'waiting'; message: string; hosts: string[] }
  | { kind: 'failed'; message: string };

/**
 * All of a Provisioning's hosts: failed when any is in an error state (every such host named,
 * with Metal3's message), waiting while any is not provisioned (each named with its state),
 * ready otherwise. Hosts in node order; duplicates are judged once.
 */
export function judgeHostProvisioning(
  hosts: readonly { host: string; metal3?: Metal3HostState }[],
): ProvisioningVerdict {
  const errors: string[] = [];
  const waiting: string[] = [];
  const seen = new Set<string>();
  for (const { host, metal3 } of hosts) {
    if (seen.has(host)) continue;
    seen.add(host);
    const readiness = hostReadiness(host, metal3);
    if (readiness.kind === 'error') errors.push(readiness.message);
    else if (readiness.kind === 'waiting') waiting.push(`${host} (${readiness.state})`);
  }
  if (errors.length > 0) return { kind: 'failed', message: listed(errors, '; ') };
  if (waiting.length === 0) return { kind: 'ready' };
  const count = waiting.length;
  return {
    kind: 'waiting',
    hosts: waiting,
    message: `Waiting for Metal3 to provision ${count} host${count === 1 ? '' : 's'}: ${listed(waiting, ', ')}; KUD starts once every host is provisioned`,
  };
}

/** `items` joined, at most ten of them, then "and N more": a condition message stays short. */
export function listed(items: readonly string[], separator: string): string {
  const shown = items.slice(0, namedInMessage).join(separator);
  const more = items.length - namedInMessage;
  return more > 0 ? `${shown}${separator}and ${more} more` : shown;
}
