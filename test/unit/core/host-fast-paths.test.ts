import fc from 'fast-check';
import { fastBareMetalHost } from '../../../shared/core/bare-metal-host-fast.js';
import { parseObjects, validateObjects } from '../../../shared/core/documents.js';
import { indexHostsByMac } from '../../../shared/core/host-index.js';
import { indexHostsFile } from '../../../shared/core/hosts-file.js';
import { stringify } from 'yaml';
import { bareMetalHostSchema, type BareMetalHost } from '../../../shared/schemas/bare-metal-host.js';

/** Values that are right for a field, wrong for it, or odd (undefined, null, arrays). */
const oddValue = fc.constantFrom<unknown>(undefined, null, 0, true, [], {}, '', 'x', ['x']);
const maybe = <T>(arb: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 4, arbitrary: arb }, { weight: 1, arbitrary: oddValue });
/** An object with some of `fields`, some keys left out, and now and then an extra key. */
const record = (fields: Record<string, fc.Arbitrary<unknown>>) =>
  fc
    .tuple(
      fc.record(fields, { requiredKeys: [] }),
      fc.option(fc.constantFrom('extra', 'labels'), { nil: undefined }),
    )
    .map(([value, extra]) => (extra === undefined ? value : { ...value, [extra]: 'ignored' }));

/** Numbers zod's z.number() refuses, and the odd values: rare, so most hosts stay valid. */
const badNumber = fc.oneof(fc.constantFrom(Number.NaN, Infinity, '8'), oddValue);
const mostly = <T>(good: fc.Arbitrary<T>, bad: fc.Arbitrary<unknown>) =>
  fc.oneof({ weight: 30, arbitrary: good }, { weight: 1, arbitrary: bad });

const mac = fc.constantFrom(
  '08:00:27:00:ab:01',
  '08-00-27-00-AB-01',
  '08:00:27:00:ab:02',
  'bad',
  ' 08:00:27:00:ab:03 ',
);
const nic = maybe(
  record({
    mac: maybe(mac),
    ip: maybe(fc.constantFrom('10.0.0.1', ' 10.0.0.2 ', '', 'nope')),
    name: maybe(fc.string()),
  }),
);
const host = maybe(
  record({
    kind: maybe(fc.constantFrom('BareMetalHost', 'Pod')),
    metadata: maybe(
      record({
        name: maybe(fc.constantFrom('h1', 'h2', '')),
        namespace: maybe(fc.constantFrom('metal3', 'lab')),
        resourceVersion: maybe(fc.constantFrom('1', '42')),
      }),
    ),
    spec: maybe(
      record({
        bootMACAddress: maybe(mac),
        online: fc.boolean(),
        // Metal3's consumerRef: a claim (shared/core/host-claim.ts) or Cluster API's.
        consumerRef: maybe(
          record({
            apiVersion: maybe(
              fc.constantFrom('bpa.akraino.org/v1alpha1', 'infrastructure.cluster.x-k8s.io/v1beta1'),
            ),
            kind: maybe(fc.constantFrom('Provisioning', 'Metal3Machine')),
            namespace: maybe(fc.constantFrom('t1', 't2')),
            name: maybe(fc.constantFrom('p', 'q')),
            uid: maybe(fc.constantFrom('u1', 'u2')),
          }),
        ),
      }),
    ),
    status: maybe(
      record({
        hardware: maybe(
          record({
            nics: maybe(fc.array(nic, { maxLength: 3 })),
            // Inspection's CPU and memory (the preflight): integers, or odd numbers zod refuses.
            cpu: mostly(
              record({ count: mostly(fc.constantFrom(1, 8, 2.5), badNumber), arch: fc.constant('x86') }),
              oddValue,
            ),
            ramMebibytes: mostly(fc.constantFrom(8192, 16384), badNumber),
            hostname: fc.constantFrom('node'),
          }),
        ),
        operationalStatus: maybe(fc.constantFrom('OK', 'error', 'discovered')),
        errorType: maybe(fc.constantFrom('', 'provisioning error', 'registration error')),
        errorMessage: maybe(fc.constantFrom('', 'Image not found')),
        provisioning: maybe(
          record({
            state: maybe(fc.constantFrom('available', 'provisioning', 'provisioned')),
            ID: fc.string(),
          }),
        ),
      }),
    ),
  }),
);

describe('BareMetalHost fast path', () => {
  it('gives exactly what zod gives when it answers, and leaves every invalid object to zod', () => {
    let answered = 0;
    fc.assert(
      fc.property(host, (value) => {
        const fast = fastBareMetalHost(value);
        const parsed = bareMetalHostSchema.safeParse(value);
        if (fast === undefined) return;
        answered++;
        expect(parsed.success).toBe(true);
        // Same values and the same key order (JSON output keeps it).
        expect(fast).toStrictEqual(parsed.data);
        expect(JSON.stringify(fast)).toBe(JSON.stringify(parsed.data));
      }),
      { numRuns: 8000 },
    );
    // The fast path must really be taken for the well-formed objects among them.
    expect(answered).toBeGreaterThan(100);
  });

  it('answers for an ordinary inspected host', () => {
    const value = {
      apiVersion: 'metal3.io/v1alpha1',
      kind: 'BareMetalHost',
      metadata: { name: 'h1', namespace: 'metal3', uid: 'u' },
      spec: { bootMACAddress: '08:00:27:00:ab:01', online: true },
      status: {
        hardware: {
          nics: [{ name: 'eth0', mac: '08:00:27:00:ab:01', ip: '10.0.0.1', pxe: true }],
          cpu: { arch: 'x86_64', count: 8 },
          ramMebibytes: 16384,
        },
      },
    };
    expect(fastBareMetalHost(value)).toStrictEqual(bareMetalHostSchema.parse(value));
  });

  it('keeps validateObjects results and messages the same as zod alone', () => {
    fc.assert(
      fc.property(fc.array(host, { maxLength: 4 }), (values) => {
        let expected: unknown;
        try {
          expected = values.map((value) => bareMetalHostSchema.parse(value));
        } catch {
          expected = 'error';
        }
        if (expected === 'error') expect(() => validateObjects(values, bareMetalHostSchema)).toThrow();
        else expect(validateObjects(values, bareMetalHostSchema)).toStrictEqual(expected);
      }),
      { numRuns: 500 },
    );
    expect(() =>
      validateObjects([{ metadata: { name: 'a' } }, { metadata: { name: '' } }], bareMetalHostSchema),
    ).toThrow('item 2 (): metadata.name: must not be empty');
  });
});

describe('indexHostsByMac with only the nodes MACs', () => {
  it('has the same entries as the full index for those MACs', () => {
    const validHost = host
      .filter((value) => bareMetalHostSchema.safeParse(value).success)
      .map((value) => bareMetalHostSchema.parse(value));
    const wanted = fc.subarray([
      '08:00:27:00:ab:01',
      '08:00:27:00:ab:02',
      '08:00:27:00:ab:03',
      '08:00:27:00:ab:04',
    ]);
    fc.assert(
      fc.property(fc.array(validHost, { maxLength: 6 }), wanted, (hosts: BareMetalHost[], macs) => {
        const full = indexHostsByMac(hosts);
        const only = new Set(macs);
        expect([...indexHostsByMac(hosts, only)]).toEqual([...full].filter(([key]) => only.has(key)));
      }),
      { numRuns: 1000 },
    );
  });
});

describe('indexHostsFile', () => {
  /** The general path: every object parsed, validated, then indexed. */
  const general = (text: string, only?: ReadonlySet<string>) =>
    indexHostsByMac(validateObjects(parseObjects(text), bareMetalHostSchema), only);
  const outcome = (read: () => Map<string, unknown>) => {
    try {
      return { index: [...read()] };
    } catch (error) {
      return { error: (error as Error).message };
    }
  };
  const asList = (hosts: unknown[], indent?: number) =>
    JSON.stringify(
      { apiVersion: 'metal3.io/v1alpha1', kind: 'BareMetalHostList', items: hosts },
      null,
      indent,
    );
  const only = new Set(['08:00:27:00:ab:01', '08:00:27:00:ab:03']);

  it('gives the index and the errors of the general path, in every file form', () => {
    let streamable = 0;
    // Well-formed hosts most of the time, so that whole Lists of them (the fast path) come up.
    const wellFormed = host.filter(
      (h) => h !== undefined && fastBareMetalHost(JSON.parse(JSON.stringify(h))) !== undefined,
    );
    const mostlyWellFormed = fc.oneof({ weight: 4, arbitrary: wellFormed }, { weight: 1, arbitrary: host });
    const forms = fc.constantFrom(
      (hosts: unknown[]) => asList(hosts),
      (hosts: unknown[]) => asList(hosts, 4),
      (hosts: unknown[]) => JSON.stringify(hosts),
      (hosts: unknown[]) => hosts.map((h) => stringify(h)).join('---\n'),
    );
    fc.assert(
      fc.property(
        fc.array(mostlyWellFormed, { minLength: 1, maxLength: 5 }),
        forms,
        fc.boolean(),
        (hosts, form, narrow) => {
          // JSON has no undefined: what a file can hold is what JSON.stringify keeps.
          const values = JSON.parse(JSON.stringify(hosts)) as unknown[];
          const text = form(values);
          const wanted = narrow ? only : undefined;
          if (text.startsWith('{') && values.every((h) => fastBareMetalHost(h) !== undefined)) streamable++;
          expect(outcome(() => indexHostsFile(text, wanted))).toEqual(outcome(() => general(text, wanted)));
        },
      ),
      { numRuns: 1500 },
    );
    // Lists of well-formed hosts, which take the host-by-host path, must be among them.
    expect(streamable).toBeGreaterThan(100);
  });

  it('names the bad host of a JSON List as the general path does', () => {
    const text = asList([
      { metadata: { name: 'a' } },
      { metadata: { name: 'b' }, spec: { bootMACAddress: 7 } },
    ]);
    expect(() => indexHostsFile(text)).toThrow('item 2 (b): spec.bootMACAddress:');
  });
});
