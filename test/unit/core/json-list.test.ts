import fc from 'fast-check';
import { forEachJsonListItem } from '../../../shared/core/json-list.js';

/** The items forEachJsonListItem hands over, or false when it declines the text. */
function itemsOf(text: string): unknown[] | false {
  const items: unknown[] = [];
  return forEachJsonListItem(text, (item) => (items.push(item), true)) && items;
}

/** What parseObjects takes from a JSON List: `items` of the whole text's JSON.parse. */
function expectedItems(text: string): unknown[] | undefined {
  try {
    const parsed = JSON.parse(text.trimStart()) as { kind?: unknown; items?: unknown };
    const isList =
      typeof parsed.kind === 'string' && parsed.kind.endsWith('List') && Array.isArray(parsed.items);
    return isList ? (parsed.items as unknown[]) : undefined;
  } catch {
    return undefined;
  }
}

const host = (n: number, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'metal3.io/v1alpha1',
  kind: 'BareMetalHost',
  metadata: { name: `host-${n}`, namespace: 'metal3' },
  spec: { bootMACAddress: `08:00:27:00:ab:${n.toString(16).padStart(2, '0')}` },
  ...extra,
});
const list = (items: unknown[], indent?: number) =>
  JSON.stringify(
    { apiVersion: 'v1', kind: 'BareMetalHostList', items, metadata: { resourceVersion: '1' } },
    null,
    indent,
  );

describe('forEachJsonListItem', () => {
  it.each([
    ['compact', undefined],
    ['pretty, as kubectl prints', 4],
  ])('hands over every item of a %s List, in order', (_, indent) => {
    const items = Array.from({ length: 50 }, (_, n) => host(n));
    expect(itemsOf(list(items, indent))).toEqual(items);
  });

  it('keeps items whole when a nested object opens like an item, after a comma or not', () => {
    const nested = host(99);
    const items = [host(1, { owners: [nested, nested] }), host(2), host(3, { status: { all: [1, nested] } })];
    expect(itemsOf(list(items))).toEqual(items);
    expect(itemsOf(list(items, 2))).toEqual(items);
  });

  it('keeps items whole when a string holds the text items open with', () => {
    // Inside a string the quotes are escaped, so the opening cannot match there; `{}` items
    // open without quotes, so there it can, and the cut inside the string must be undone.
    const items = [host(1, { note: `,${JSON.stringify(host(2))}` }), host(2), host(3)];
    expect(itemsOf(list(items))).toEqual(items);
    const bare = [{}, { note: '{},{},{},{},{},{},{},{},{},{},{},{},{},{}' }, {}];
    const text = JSON.stringify({ kind: 'List', items: bare }).replace(
      '[{},{"',
      '[{},{},{},{},{},{},{},{},{},{},{},{"',
    );
    expect(itemsOf(text)).toEqual(expectedItems(text));
  });

  it('takes items that open differently from the first one', () => {
    const items = [host(1), { kind: 'BareMetalHost', metadata: { name: 'other' } }, host(3), 'odd', 7, null];
    expect(itemsOf(list(items))).toEqual(items);
  });

  it.each([
    [
      'a nested "items" before the top-level one',
      '{"kind":"List","metadata":{"x":{"items":[{"n":0}]}},"items":[{"c":1},{"c":2}]}',
    ],
    [
      'a string "items" before the top-level one',
      '{"kind":"List","metadata":{"a":{"items":"[{}]"}},"items":[{"c":1},{"c":2}]}',
    ],
    [
      'a second top-level "items" (JSON.parse keeps the last)',
      '{"kind":"List","items":[{"a":1},{"a":2}],"items":[{"b":1}]}',
    ],
  ])('declines %s rather than take the wrong items', (_, text) => {
    expect(itemsOf(text)).toBe(false);
  });

  it.each([
    ['YAML', 'kind: BareMetalHostList\nitems:\n  - metadata: {name: a}\n'],
    ['a JSON array', JSON.stringify([host(1), host(2)])],
    ['an empty list', list([])],
    ['an object that is not a List', JSON.stringify({ kind: 'BareMetalHost', items: [host(1)] })],
    ['items that are not objects only', JSON.stringify({ kind: 'List', items: [1, 2] })],
    ['a missing comma between items', list([host(1), host(2)]).replace('},{"apiVersion"', '} {"apiVersion"')],
    ['a truncated file', list([host(1), host(2)]).slice(0, -20)],
    ['text after the object', `${list([host(1), host(2)])} {}`],
    ['a bad literal inside an item', list([host(1), host(2, { online: true })]).replace('true', 'tru')],
  ])('declines %s', (_, text) => {
    expect(itemsOf(text)).toBe(false);
  });

  it('stops as soon as accept refuses an item', () => {
    const seen: unknown[] = [];
    const accepted = forEachJsonListItem(list([host(1), host(2), host(3)]), (item) => {
      seen.push(item);
      return seen.length < 2;
    });
    expect(accepted).toBe(false);
    expect(seen).toHaveLength(2);
  });

  it('never disagrees with JSON.parse on generated Lists, damaged or not', () => {
    let taken = 0;
    const item = fc.oneof(
      { weight: 4, arbitrary: fc.nat(255).map((n) => host(n)) },
      { weight: 2, arbitrary: fc.nat(255).map((n) => host(n, { nested: [host(n), { s: '}, {' }] })) },
      { weight: 1, arbitrary: fc.jsonValue() },
    );
    const damage = fc.oneof(
      fc.constant((text: string) => text),
      fc.constant((text: string) => text),
      fc
        .tuple(fc.nat(), fc.constantFrom('', ',', '}', ']', '"', '{"apiVersion":"metal3.io/v1alpha1"'))
        .map(([at, insert]) => (text: string) => {
          const pos = at % (text.length + 1);
          return text.slice(0, pos) + insert + text.slice(pos + (insert === '' ? 1 : 0));
        }),
    );
    fc.assert(
      fc.property(
        fc.array(item, { maxLength: 8 }),
        fc.constantFrom(undefined, 2),
        damage,
        (items, indent, mend) => {
          const text = mend(list(items, indent));
          const got = itemsOf(text);
          if (got === false) return;
          taken++;
          expect(got).toEqual(expectedItems(text));
        },
      ),
      { numRuns: 2000 },
    );
    // The fast path must really be taken on most undamaged Lists.
    expect(taken).toBeGreaterThan(500);
  });
});
