import { isIP } from 'node:net';
import type { BareMetalHost } from '../schemas/bare-metal-host.js';
import { normaliseMac } from './mac.js';

/** What is known about one MAC from the BareMetalHosts. */
export interface HostMacEntry {
  /** `<namespace>/<name>` of the first host that has the MAC (boot MAC or a NIC). */
  host: string;
  /** IP of that host's NIC with this MAC, when inspection reported one (checked on lookup). */
  nicIp?: string;
}

/**
 * BareMetalHosts indexed by every MAC they carry (`spec.bootMACAddress` and each
 * `status.hardware.nics[].mac`), built once so each node is found in O(1). Malformed MACs
 * and IPs in host objects are ignored: a broken host must not hide the others. IPs are
 * checked when a node asks for one (hostNicIp), not for every NIC of every host.
 */
export function indexHostsByMac(hosts: readonly BareMetalHost[]): Map<string, HostMacEntry> {
  const index = new Map<string, HostMacEntry>();
  for (const host of hosts) {
    const name = host.metadata.namespace
      ? `${host.metadata.namespace}/${host.metadata.name}`
      : host.metadata.name;
    const macs = new Map<string, string | undefined>();
    const boot = host.spec?.bootMACAddress ? normaliseMac(host.spec.bootMACAddress) : null;
    if (boot !== null) macs.set(boot, undefined);
    for (const nic of host.status?.hardware?.nics ?? []) {
      const mac = nic.mac ? normaliseMac(nic.mac) : null;
      if (mac === null) continue;
      const ip = nic.ip?.trim();
      if (ip && macs.get(mac) === undefined) macs.set(mac, ip);
      else if (!macs.has(mac)) macs.set(mac, undefined);
    }
    for (const [mac, nicIp] of macs) {
      if (index.has(mac)) continue;
      index.set(mac, nicIp === undefined ? { host: name } : { host: name, nicIp });
    }
  }
  return index;
}

/** The NIC address of an index entry when it is a valid IP address. */
export function hostNicIp(entry: HostMacEntry): string | undefined {
  return entry.nicIp !== undefined && isIP(entry.nicIp) !== 0 ? entry.nicIp : undefined;
}
