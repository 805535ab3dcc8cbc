import { isIP } from 'node:net';
import { normaliseLeaseMac } from './lease-mac.js';

/**
 * dnsmasq lease file parser: lines `<expiry> <mac> <ip> <hostname|*> <client-id|*>`, newest
 * first, so the first line naming a MAC decides. A `duid <server-duid>` line starts the
 * DHCPv6 section (`<expiry> <iaid> <ipv6> ...`), which names no MAC and is ignored. Lines that
 * do not have this shape are skipped.
 */
export function parseDnsmasqLeases(text: string): Map<string, string | null> {
  const leases = new Map<string, string | null>();
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    const line = text.slice(start, end).trim();
    start = end + 1;
    if (line === '' || line.startsWith('#')) continue;
    const fields = line.split(/\s+/);
    if (fields[0] === 'duid') break;
    const [expiry, macText, ip] = fields;
    if (!expiry || !/^\d+$/.test(expiry) || !macText || !ip) continue;
    const mac = normaliseLeaseMac(macText);
    if (mac === null || isIP(ip) === 0 || leases.has(mac)) continue;
    leases.set(mac, ip);
  }
  return leases;
}
