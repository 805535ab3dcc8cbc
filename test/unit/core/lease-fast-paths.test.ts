import fc from 'fast-check';
import { parseIscLeases } from '../../../shared/core/lease-isc.js';
import { leaseMacKey, macFromKey, normaliseLeaseMac, notAMac } from '../../../shared/core/lease-mac.js';
import { MacKeyTable } from '../../../shared/core/mac-key-table.js';
import { parseIscLeasesReference } from './lease-isc-reference.js';

const hexOctet = fc.integer({ min: 0, max: 255 }).map((n) => n.toString(16));
/** Text that is often a lease-file MAC and often nearly one. */
const macLike = fc.oneof(
  fc
    .tuple(
      fc.array(
        fc.oneof(
          hexOctet,
          hexOctet.map((octet) => octet.padStart(2, '0').toUpperCase()),
        ),
        {
          minLength: 5,
          maxLength: 7,
        },
      ),
      fc.array(fc.constantFrom(':', '-', ':', '.', ''), { minLength: 6, maxLength: 6 }),
    )
    .map(([octets, separators]) =>
      octets.map((octet, i) => (i === 0 ? '' : separators[i]!) + octet).join(''),
    ),
  fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEFgG:-. '), maxLength: 20 }),
);

describe('leaseMacKey and macFromKey', () => {
  it('accept exactly what normaliseLeaseMac accepts, with the same normalised text', () => {
    fc.assert(
      fc.property(macLike, fc.string({ maxLength: 3 }), fc.string({ maxLength: 3 }), (mac, before, after) => {
        const text = before + mac + after;
        const key = leaseMacKey(text, before.length, before.length + mac.length);
        const expected = normaliseLeaseMac(mac);
        expect(key === notAMac ? null : macFromKey(key)).toBe(expected);
      }),
      { numRuns: 2000 },
    );
  });

  it('reads the octets as one number', () => {
    expect(leaseMacKey('ff:ff:ff:ff:ff:ff', 0, 17)).toBe(2 ** 48 - 1);
    expect(macFromKey(leaseMacKey('0:16:3E:1:2:3', 0, 13))).toBe('00:16:3e:01:02:03');
    expect(leaseMacKey('', 0, 0)).toBe(notAMac);
  });
});

describe('MacKeyTable', () => {
  it('behaves like a Map, insertion order included, across growth', () => {
    const key = fc.oneof(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 2 ** 48 - 1 }));
    fc.assert(
      fc.property(fc.array(fc.tuple(key, fc.integer()), { maxLength: 300 }), (sets) => {
        const table = new MacKeyTable(16);
        const map = new Map<number, number>();
        for (const [k, v] of sets) {
          table.set(k, v);
          map.set(k, v);
        }
        const entries: [number, number][] = [];
        table.forEach((k, v) => entries.push([k, v]));
        expect(entries).toEqual([...map]);
        expect(table.size).toBe(map.size);
        for (const [k] of sets) expect(table.get(k)).toBe(map.get(k));
        expect(table.get(2 ** 48)).toBeUndefined();
      }),
    );
  });
});

/** Lease-file pieces: ordinary statements and every kind of odd one the scanner must survive. */
const quoted = fc
  .string({
    unit: fc.constantFrom('a', ' ', ';', '{', '}', '#', '\\', '\\"', '\\0', '\\101', '\\\\'),
    maxLength: 8,
  })
  .map((body) => `"${body}"`);
const word = fc.oneof(
  fc.constantFrom('10.0.0.1', '10.0.0.2', 'fd00::1', 'nope', 'active', 'free', 'state', 'ethernet', 'lease'),
  macLike,
  quoted,
);
const space = fc.constantFrom(' ', '  ', '\n', '\t', ' # note ; { } "\n', '\r\n');
const statement: fc.Arbitrary<string> = fc.letrec((tie) => ({
  statement: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom(
      'starts 4 2024/05/02 10:00:00;',
      'binding state active;',
      'binding state free;',
      'next binding state active;',
      'rewind binding state active;',
      'binding  state\nactive ;',
      'hardware ethernet 08:00:27:00:ab:01;',
      'hardware ethernet 8:0:27:0:AB:2;',
      'hardware token-ring 08:00:27:00:ab:03;',
      'hardware ethernet;',
      'deleted;',
      ';',
      '}',
    ),
    fc
      .tuple(fc.constantFrom('hardware ethernet', 'binding state', 'uid', 'set x ='), word)
      .map(([k, w]) => `${k} ${w};`),
    fc
      .tuple(
        fc.constantFrom('on expiry', 'failover peer "x" state', 'host h'),
        fc.array(tie('statement'), { maxLength: 3 }),
      )
      .map(([head, inner]) => `${head} { ${inner.join(' ')} }`),
  ),
})).statement;
const block = fc.oneof(
  statement,
  fc
    .tuple(word, fc.array(statement, { maxLength: 6 }), space, fc.boolean())
    .map(
      ([address, inner, gap, closed]) => `lease ${address} {${gap}${inner.join(gap)}${closed ? '\n}' : ''}`,
    ),
);
const leaseFile = fc.array(fc.tuple(space, block), { maxLength: 12 }).map((parts) => parts.flat().join(''));

describe('ISC scanner', () => {
  it('gives the same leases as the reference scanner on random files', () => {
    fc.assert(
      fc.property(leaseFile, (text) => {
        expect([...parseIscLeases(text)]).toEqual([...parseIscLeasesReference(text)]);
      }),
      { numRuns: 3000 },
    );
  });

  it('gives the same leases as the reference scanner on every prefix of a realistic file', () => {
    const text = `authoring-byte-order little-endian;
server-duid "\\000\\001;{";
lease 10.0.0.1 {
  binding state active; # comment } ;
  hardware ethernet 08:00:27:00:ab:01;
  uid "\\001\\"}";
  on expiry { set x = "y"; }
}
lease "10.0.0.2" { binding state active; hardware ethernet "08:00:27:00:ab:02"; }
`;
    for (let end = 0; end <= text.length; end++) {
      const prefix = text.slice(0, end);
      expect([...parseIscLeases(prefix)]).toEqual([...parseIscLeasesReference(prefix)]);
    }
  });
});
