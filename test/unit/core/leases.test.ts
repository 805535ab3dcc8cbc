import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { detectLeaseFormat, parseLeases } from '../../../shared/core/leases.js';
import { parseIscLeases } from '../../../shared/core/lease-isc.js';
import { parseDnsmasqLeases } from '../../../shared/core/lease-dnsmasq.js';
import { fixturesRoot } from './golden.js';

const fixture = (name: string) => readFileSync(join(fixturesRoot, 'render', 'leases', name), 'utf8');

describe('ISC dhcpd.leases', () => {
  it('reads the fixture: last block decides, inactive means no IP, rubouts and odd strings are harmless', () => {
    const leases = parseIscLeases(fixture('dhcpd.leases'));
    expect(Object.fromEntries(leases)).toEqual({
      '08:00:27:00:ab:01': '10.20.0.111',
      '08:00:27:00:ab:02': '10.20.0.2',
      '08:00:27:00:ab:03': null,
      '08:00:27:00:ab:05': null,
      '08:00:27:00:ab:06': '10.20.0.16',
      '08:00:27:00:ab:10': '10.20.0.20',
    });
  });

  it('lets a later active block override an earlier inactive one', () => {
    const text = `lease 10.0.0.1 { binding state free; hardware ethernet 00:00:00:00:00:01; }
lease 10.0.0.2 { binding state active; hardware ethernet 00:00:00:00:00:01; }`;
    expect(parseIscLeases(text).get('00:00:00:00:00:01')).toBe('10.0.0.2');
  });

  it('does not mistake next/rewind binding state for the binding state', () => {
    const text = `lease 10.0.0.1 {
  binding state backup;
  next binding state active;
  rewind binding state active;
  hardware ethernet 00:00:00:00:00:01;
}`;
    expect(parseIscLeases(text).get('00:00:00:00:00:01')).toBeNull();
  });

  it('needs a binding state to count a lease as active', () => {
    expect(
      parseIscLeases('lease 10.0.0.1 { hardware ethernet 00:00:00:00:00:01; }').get('00:00:00:00:00:01'),
    ).toBeNull();
  });

  it('keeps the blocks around statements it does not know', () => {
    const text = `# comment { not a block
server-duid "\\000\\001}{;";
authoring-byte-order little-endian;
class "pxe" { match if substring (option vendor-class-identifier, 0, 9) = "PXEClient"; }
subclass "pxe" 1:00:00:00:00:00:09;
lease 10.0.0.1 { binding state active; hardware ethernet 00:00:00:00:00:01; }
failover peer "x" state { my state normal at 1 2024/01/01 00:00:00; }
ia-na "\\001\\002" { cltt 1 2024/01/01 00:00:00; iaaddr fd00::1 { binding state active; } }
host rubout { dynamic; deleted; }
;}
lease 10.0.0.2 { binding state active; hardware ethernet 00:00:00:00:00:02; }`;
    expect(Object.fromEntries(parseIscLeases(text))).toEqual({
      '00:00:00:00:00:01': '10.0.0.1',
      '00:00:00:00:00:02': '10.0.0.2',
    });
  });

  it('ignores a block truncated at the end of the file and non-ethernet hardware', () => {
    const text = `lease 10.0.0.1 { binding state active; hardware token-ring 00:00:00:00:00:01; }
lease 10.0.0.2 { binding state active; hardware ethernet 00:00:00:00:00:02;`;
    expect(parseIscLeases(text).size).toBe(0);
  });

  it('gives no IP when the deciding block has an address that is not an IP', () => {
    const text = `lease 10.0.0.1 { binding state active; hardware ethernet 00:00:00:00:00:01; }
lease nope { binding state active; hardware ethernet 00:00:00:00:00:01; }`;
    expect(parseIscLeases(text).get('00:00:00:00:00:01')).toBeNull();
  });
});

describe('dnsmasq leases', () => {
  it('reads the fixture: first line decides, the DHCPv6 section is ignored', () => {
    expect(Object.fromEntries(parseDnsmasqLeases(fixture('dnsmasq.leases')))).toEqual({
      '08:00:27:00:ab:01': '10.30.0.11',
      '08:00:27:00:ab:02': '10.30.0.12',
    });
  });

  it('skips lines that are not leases', () => {
    const text =
      'garbage\n1714651200 not-a-mac 10.0.0.1 * *\n1714651200 00:00:00:00:00:01 nope * *\n\n1 00:00:00:00:00:02 10.0.0.2 * *\n';
    expect(Object.fromEntries(parseDnsmasqLeases(text))).toEqual({ '00:00:00:00:00:02': '10.0.0.2' });
  });
});

describe('lease format detection', () => {
  it.each([
    ['dhcpd.leases', 'isc'],
    ['dnsmasq.leases', 'dnsmasq'],
  ])('detects %s as %s', (name, format) => {
    expect(detectLeaseFormat(fixture(name))).toBe(format);
    expect(parseLeases(fixture(name)).format).toBe(format);
  });

  it('treats a file that starts with duid as dnsmasq and an empty file as ISC', () => {
    expect(detectLeaseFormat('duid 00:01\n')).toBe('dnsmasq');
    expect(detectLeaseFormat('')).toBe('isc');
    expect(detectLeaseFormat('\n# comment\nlease 10.0.0.1 {\n}\n')).toBe('isc');
  });
});
