import { BpaError } from '../../../shared/errors.js';
import { parseObjects, parseSingleObject, validateObjects } from '../../../shared/core/documents.js';
import { bareMetalHostSchema } from '../../../shared/schemas/bare-metal-host.js';
import { provisioningSchema } from '../../../shared/schemas/provisioning.js';

function messageOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(BpaError);
    return (error as Error).message;
  }
  throw new Error('expected an error');
}

describe('parseObjects', () => {
  it('reads multi-document YAML, skipping empty documents', () => {
    expect(parseObjects('---\na: 1\n---\n---\nb: 2\n')).toEqual([{ a: 1 }, { b: 2 }]);
  });

  it('flattens Lists, <Kind>Lists and arrays, in YAML or JSON', () => {
    expect(parseObjects('kind: List\nitems:\n  - a: 1\n  - a: 2\n')).toEqual([{ a: 1 }, { a: 2 }]);
    expect(parseObjects('{"kind": "BareMetalHostList", "items": [{"a": 1}]}')).toEqual([{ a: 1 }]);
    expect(parseObjects('[{"a": 1}, {"a": 2}]')).toEqual([{ a: 1 }, { a: 2 }]);
    expect(parseObjects('- a: 1\n- a: 2\n')).toEqual([{ a: 1 }, { a: 2 }]);
  });

  it('keeps MACs as strings (YAML 1.2, no sexagesimal numbers)', () => {
    expect(parseObjects('mac: 10:10:10:10:10:10\n')).toEqual([{ mac: '10:10:10:10:10:10' }]);
  });

  it('explains broken YAML in one line', () => {
    const message = messageOf(() => parseObjects('a: [1, 2\n'));
    expect(message).toMatch(/^not valid YAML: /);
    expect(message).not.toContain('\n');
    expect(messageOf(() => parseObjects('a: 1\na: 2\n'))).toMatch(/not valid YAML: .*unique/i);
  });

  it('refuses alias bombs quickly instead of expanding them', () => {
    const lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
    for (let i = 1; i < 12; i++) {
      const prev = String.fromCharCode(96 + i);
      const next = String.fromCharCode(97 + i);
      lines.push(
        `${next}: &${next} [*${prev},*${prev},*${prev},*${prev},*${prev},*${prev},*${prev},*${prev},*${prev}]`,
      );
    }
    expect(messageOf(() => parseObjects(lines.join('\n')))).toMatch(/not valid YAML: .*alias/i);
  });
});

describe('validateObjects and parseSingleObject', () => {
  it('names the object and the field that is wrong', () => {
    const hosts = parseObjects(
      '[{"metadata": {"name": "h1"}}, {"metadata": {"name": "h2"}, "spec": {"bootMACAddress": 7}}]',
    );
    expect(messageOf(() => validateObjects(hosts, bareMetalHostSchema))).toBe(
      'item 2 (h2): spec.bootMACAddress: expected a string, got a number',
    );
  });

  it('wants exactly one Provisioning', () => {
    expect(messageOf(() => parseSingleObject('a: 1\n---\nb: 2\n', provisioningSchema, 'Provisioning'))).toBe(
      'expected exactly one Provisioning, found 2 objects',
    );
    expect(messageOf(() => parseSingleObject('', provisioningSchema, 'Provisioning'))).toBe(
      'expected exactly one Provisioning, found 0 objects',
    );
  });
});
