import { isIP } from 'node:net';
import type { VirtualMachineInstance } from '../schemas/vmi.js';
import { podConsumerAnnotation } from './host-claim.js';
import { normaliseMac } from './mac.js';

/** A running KubeVirt VM (VirtualMachineInstance) found by the MAC of one of its interfaces. */
export interface KubevirtVm {
  /** `<namespace>/<name>` of the VMI. */
  vmi: string;
  /** That interface's `ipAddress`; absent while KubeVirt reports none yet. */
  ip?: string;
  /** Its `bpa.akraino.org/consumer` annotation: the Provisioning that claims it (host-claim.ts). */
  consumer?: string;
  /** The VMI's resourceVersion: the precondition of a claim. */
  resourceVersion?: string;
}

/**
 * VirtualMachineInstances in phase `Running`, indexed by the MAC of each entry of
 * `status.interfaces[]` (contract section 14), each with that entry's `ipAddress`. VMIs not
 * running (Pending, Scheduling, Scheduled, Succeeded, Failed) are skipped, and so is an entry
 * without a valid MAC: never fatal. An address that is not an IP counts as none.
 */
export function indexKubevirtVmsByMac(vmis: readonly VirtualMachineInstance[]): Map<string, KubevirtVm> {
  const index = new Map<string, KubevirtVm>();
  for (const vmi of vmis) {
    if (vmi.status?.phase !== 'Running') continue;
    const name = vmi.metadata.namespace
      ? `${vmi.metadata.namespace}/${vmi.metadata.name}`
      : vmi.metadata.name;
    for (const entry of vmi.status.interfaces ?? []) {
      const mac = entry.mac ? normaliseMac(entry.mac) : null;
      if (mac === null) continue;
      const candidate = entry.ipAddress?.trim();
      const ip = candidate && isIP(candidate) !== 0 ? candidate : undefined;
      const known = index.get(mac);
      // A VM with an IP beats one still waiting for it (e.g. a VMI being replaced).
      if (known && (known.ip !== undefined || ip === undefined)) continue;
      const vm: KubevirtVm = ip === undefined ? { vmi: name } : { vmi: name, ip };
      const consumer = vmi.metadata.annotations?.[podConsumerAnnotation];
      if (consumer !== undefined) vm.consumer = consumer;
      if (vmi.metadata.resourceVersion !== undefined) vm.resourceVersion = vmi.metadata.resourceVersion;
      index.set(mac, vm);
    }
  }
  return index;
}
