import type { HostMacEntry } from './host-index.js';
import { hostReadiness, listed } from './host-provisioning.js';
import type { HardwareRequest, PlannedNode } from './node-plan.js';

/**
 * Contract section 14, the preflight: where the spec gives a node's `cpu` (cores) or `memory` (a
 * Kubernetes quantity), its BareMetalHost's inspected hardware (`status.hardware.cpu.count`,
 * `status.hardware.ramMebibytes`) must meet them before anything is launched or written to a host:
 * host-lookup runs it once the hosts are found and before any claim or spec.image, so a host too
 * small is never reimaged. Virtlet VMs have no inspected hardware: their cpu/memory are not checked.
 */

export type PreflightVerdict =
  | { kind: 'passed' }
  /** A host Metal3 has not inspected yet: nothing is claimed or written until it has. */
  | { kind: 'waiting'; message: string }
  | { kind: 'failed'; reason: 'PreflightFailed' | 'HostProvisioningFailed'; message: string };

/**
 * Metal3 states (metal3.io/v1alpha1 ProvisioningState) in which a host has not been inspected
 * yet, or not registered at all (no state, `unmanaged` without a BMC): hardware is still to come.
 * A host past them without hardware data was never inspected (inspection disabled): waiting would
 * never end, so that fails.
 */
const beforeInspection: ReadonlySet<string> = new Set(['', 'unmanaged', 'registering', 'inspecting']);

/**
 * `uninspected`: `wait` (host-lookup, where Metal3 runs) waits for a host without the hardware a
 * node asks about, or fails when Metal3 is past inspecting it; `skip` (`bpa render`, hand-written
 * hosts) checks only what a host reports.
 */
export function preflight(
  nodes: readonly PlannedNode[],
  hostsByMac: ReadonlyMap<string, HostMacEntry>,
  uninspected: 'wait' | 'skip',
): PreflightVerdict {
  const short: string[] = [];
  const notInspected: string[] = [];
  const errors: string[] = [];
  const waiting: string[] = [];
  for (const { label, mac, requires } of nodes) {
    const entry = hostsByMac.get(mac);
    // A node without a host is HostNotFound, reported before this.
    if (!requires || !entry) continue;
    const cpus = entry.hardware?.cpus;
    const ram = entry.hardware?.ramMebibytes;
    const missing =
      (requires.cpu !== undefined && cpus === undefined) || (requires.memory && ram === undefined);
    if (missing && uninspected === 'wait') {
      const readiness = hostReadiness(entry.host, entry.metal3);
      const state = entry.metal3?.state ?? '';
      if (readiness.kind === 'error') errors.push(readiness.message);
      else if (beforeInspection.has(state))
        waiting.push(
          `${entry.host} (${state || 'no provisioning state yet'}; node ${label} asks for ${asked(requires)})`,
        );
      else
        notInspected.push(
          `Host ${entry.host} (MAC ${mac}) reports no inspected ${missingWords(requires, cpus, ram)} in status.hardware (Metal3 state ${state}); node ${label} asks for ${asked(requires)}`,
        );
      continue;
    }
    const cpuShort = requires.cpu !== undefined && cpus !== undefined && cpus < requires.cpu;
    const memoryShort =
      requires.memory !== undefined && ram !== undefined && ram * 2 ** 20 < requires.memory.bytes;
    if (cpuShort || memoryShort)
      short.push(
        `Host ${entry.host} (MAC ${mac}) has ${has(requires, cpus, ram)}; node ${label} asks for ${asked(requires)}`,
      );
  }
  const failures = [...short, ...notInspected];
  if (failures.length > 0)
    return { kind: 'failed', reason: 'PreflightFailed', message: listed(failures, '; ') };
  if (errors.length > 0)
    return { kind: 'failed', reason: 'HostProvisioningFailed', message: listed(errors, '; ') };
  if (waiting.length === 0) return { kind: 'passed' };
  const count = waiting.length;
  return {
    kind: 'waiting',
    message: `Waiting for Metal3 to inspect ${count} host${count === 1 ? '' : 's'} for the preflight: ${listed(waiting, ', ')}; no host is claimed or given an image until then`,
  };
}

const cpuWords = (count: number) => `${count} CPU${count === 1 ? '' : 's'}`;

/** "8 CPUs and 16Gi of memory": what the node asks, as the spec wrote it. */
function asked(requires: HardwareRequest): string {
  const parts: string[] = [];
  if (requires.cpu !== undefined) parts.push(cpuWords(requires.cpu));
  if (requires.memory) parts.push(`${requires.memory.text} of memory`);
  return parts.join(' and ');
}

/** "4 CPUs and 8192 MiB of memory": what the host has, of what the node asks. */
function has(requires: HardwareRequest, cpus: number | undefined, ram: number | undefined): string {
  const parts: string[] = [];
  if (requires.cpu !== undefined) parts.push(cpus === undefined ? 'no inspected CPU count' : cpuWords(cpus));
  if (requires.memory) parts.push(ram === undefined ? 'no inspected memory' : `${ram} MiB of memory`);
  return parts.join(' and ');
}

function missingWords(requires: HardwareRequest, cpus: number | undefined, ram: number | undefined): string {
  const parts: string[] = [];
  if (requires.cpu !== undefined && cpus === undefined) parts.push('CPU count');
  if (requires.memory && ram === undefined) parts.push('memory');
  return parts.join(' or ');
}
