import { isIP } from 'node:net';
import type { BareMetalHost, ConsumerRef } from '../schemas/bare-metal-host.js';
import { metal3StateOf, type Metal3HostState } from './host-provisioning.js';
import { normaliseMac } from './mac.js';

/** What is known about one MAC from the BareMetalHosts. */
export interface HostMacEntry {
  /** `<namespace>/<name>` of the first host that has the MAC (boot MAC or a NIC). */
  host: string;
  /** IP of that host's NIC with this MAC, when inspection reported one (checked on lookup). */
  nicIp?: string;
  /** The host's `spec.consumerRef` when set: who uses it (shared/core/host-claim.ts). */
  consumer?: ConsumerRef;
  /** The host's resourceVersion when read from the API: the precondition of a claim. */
  resourceVersion?: string;
  /** What Metal3 says of the host's provisioning (state, errors): shared/core/host-provisioning.ts. */
  metal3?: Metal3HostState;
  /** What inspection found (status.hardware): what the preflight compares (shared/core/preflight.ts). */
  hardware?: HostHardware;
}

/** A host's inspected CPU count and memory, each only when Metal3 reported it. */
export interface HostHardware {
  cpus?: number;
  ramMebibytes?: number;
}

function hardwareOf(host: BareMetalHost): HostHardware | undefined {
  const found = host.status?.hardware;
  const cpus = found?.cpu?.count ?? undefined;
  const ramMebibytes = found?.ramMebibytes ?? undefined;
  if (cpus === undefined && ramMebibytes === undefined) return undefined;
  const hardware: HostHardware = {};
  if (cpus !== undefined) hardware.cpus = cpus;
  if (ramMebibytes !== undefined) hardware.ramMebibytes = ramMebibytes;
  return hardware;
}

/**
 * BareMetalHosts indexed by every MAC they carry (`spec.bootMACAddress` and each
 * `status.hardware.nics[].mac`), built once so each node is found in O(1). Malformed MACs
 * and IPs in host objects are ignored: a broken host must not hide the others. IPs are
 * checked when a node asks for one (hostNicIp), not for every NIC of every host.
 *
 * With `only`, just those MACs are indexed (the nodes of one Provisioning): entries are the
 * same as in the full index, but ten thousand hosts cost a scan instead of a large map.
 */
export function indexHostsByMac(
  hosts: readonly BareMetalHost[],
  only?: ReadonlySet<string>,
): Map<string, HostMacEntry> {
  const indexer = new HostMacIndexer(only);
  for (const host of hosts) indexer.add(host);
  return indexer.index;
}

/**
 * Builds the index of indexHostsByMac one host at a time, so that hosts parsed one by one
 * (forEachJsonListItem) can be dropped as soon as they are indexed.
 */
export class HostMacIndexer {
  readonly index = new Map<string, HostMacEntry>();
  // One host's MACs in first-seen order with the first NIC IP for each; reused across hosts
  // (a host has a handful of MACs, so a linear search beats a map per host).
  private readonly macs: string[] = [];
  private readonly nicIps: (string | undefined)[] = [];

  /** @param only when given, just these (normalised) MACs are indexed. */
  constructor(private readonly only?: ReadonlySet<string>) {}

  add(host: BareMetalHost): void {
    const { macs, nicIps, index } = this;
    macs.length = 0;
    nicIps.length = 0;
    const boot = host.spec?.bootMACAddress ? normaliseMac(host.spec.bootMACAddress) : null;
    if (this.wanted(boot)) {
      macs.push(boot);
      nicIps.push(undefined);
    }
    for (const nic of host.status?.hardware?.nics ?? []) {
      const mac = nic.mac ? normaliseMac(nic.mac) : null;
      if (!this.wanted(mac)) continue;
      const ip = nic.ip?.trim() || undefined;
      const seen = macs.indexOf(mac);
      if (seen === -1) {
        macs.push(mac);
        nicIps.push(ip);
      } else if (nicIps[seen] === undefined) nicIps[seen] = ip;
    }
    if (macs.length === 0) return;
    const name = host.metadata.namespace
      ? `${host.metadata.namespace}/${host.metadata.name}`
      : host.metadata.name;
    const consumer = host.spec?.consumerRef ?? undefined;
    const resourceVersion = host.metadata.resourceVersion;
    const metal3 = metal3StateOf(host);
    const hardware = hardwareOf(host);
    for (let i = 0; i < macs.length; i++) {
      const nicIp = nicIps[i];
      const entry: HostMacEntry = nicIp === undefined ? { host: name } : { host: name, nicIp };
      if (consumer) entry.consumer = consumer;
      if (resourceVersion !== undefined) entry.resourceVersion = resourceVersion;
      if (metal3) entry.metal3 = metal3;
      if (hardware) entry.hardware = hardware;
      index.set(macs[i]!, entry);
    }
  }

  private wanted(mac: string | null): mac is string {
    return mac !== null && (this.only === undefined || this.only.has(mac)) && !this.index.has(mac);
  }
}

/** The NIC address of an index entry when it is a valid IP address. */
export function hostNicIp(entry: HostMacEntry): string | undefined {
  return entry.nicIp !== undefined && isIP(entry.nicIp) !== 0 ? entry.nicIp : undefined;
}
