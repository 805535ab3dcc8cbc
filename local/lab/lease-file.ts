import type { LabHost } from './lab-definition.js';

/**
 * IMITATION: an ISC dhcpd lease file (dhcpd.leases(5)) with one active lease per host, written as
 * the lab's DHCP server would have written it; no dhcpd runs in the demo. The lease parsers are
 * tested against the format's own rules (test/unit/core), not yet against files a real dhcpd or
 * dnsmasq wrote (both install from Debian; that test is still to be written).
 */
export function renderIscLeaseFile(hosts: readonly LabHost[], now: Date = new Date()): string {
  const stamp = (date: Date) =>
    `${date.getUTCDay()} ${date.toISOString().slice(0, 19).replace('T', ' ').replace(/-/g, '/')}`;
  const ends = new Date(now.getTime() + 24 * 3600 * 1000);
  const blocks = hosts.map((host) =>
    [
      `lease ${host.ip} {`,
      `  starts ${stamp(now)};`,
      `  ends ${stamp(ends)};`,
      `  cltt ${stamp(now)};`,
      '  binding state active;',
      '  next binding state free;',
      `  hardware ethernet ${host.mac};`,
      `  client-hostname "${host.label}";`,
      '}',
    ].join('\n'),
  );
  return [
    '# The format of this file is documented in the dhcpd.leases(5) manual page.',
    '# Simulated lab of `bpa demo`: written by the demo, not by a DHCP server.',
    'authoring-byte-order little-endian;',
    '',
    ...blocks.map((block) => block + '\n'),
  ].join('\n');
}
