import { parseDnsmasqLeases } from './lease-dnsmasq.js';
import { parseIscLeases } from './lease-isc.js';

export type LeaseFormat = 'isc' | 'dnsmasq';

/**
 * A parsed lease file, built once and looked up per node in O(1). `byMac` maps a normalised MAC
 * to the IP of its deciding lease, or to null when that lease is not active.
 */
export interface LeaseIndex {
  format: LeaseFormat;
  byMac: ReadonlyMap<string, string | null>;
}

/**
 * dnsmasq files are lines that start with an expiry time (or `duid`); dhcpd files start with
 * comments and `lease`/`server-duid`/`authoring-byte-order` statements.
 */
export function detectLeaseFormat(text: string): LeaseFormat {
  const firstLine = /^[ \t]*([^#\s][^\n]*)$/m.exec(text)?.[1] ?? '';
  return /^(\d+\s+\S+\s+\S+|duid\s)/.test(firstLine) ? 'dnsmasq' : 'isc';
}

export function parseLeases(text: string, format: LeaseFormat = detectLeaseFormat(text)): LeaseIndex {
  return { format, byMac: format === 'isc' ? parseIscLeases(text) : parseDnsmasqLeases(text) };
}
