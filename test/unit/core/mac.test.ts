import fc from 'fast-check';
import { BpaError } from '../../../shared/errors.js';
import { normaliseMac, requireMac } from '../../../shared/core/mac.js';
import { normaliseLeaseMac } from '../../../shared/core/lease-mac.js';

describe('MAC normalisation', () => {
  it.each([
    ['08:00:27:00:ab:3d', '08:00:27:00:ab:3d'],
    ['08:00:27:00:AB:3D', '08:00:27:00:ab:3d'],
    ['08-00-27-00-AB-3D', '08:00:27:00:ab:3d'],
    ['  08-00-27-00-ab-3d ', '08:00:27:00:ab:3d'],
  ])('normalises %s', (input, expected) => {
    expect(normaliseMac(input)).toBe(expected);
  });

  it.each([
    '',
    '08:00:27:00:ab',
    '08:00:27:00:ab:3d:11',
    '08:00-27:00:ab:3d',
    '0800.2700.ab3d',
    'zz:00:27:00:ab:3d',
    '8:0:27:0:ab:3d',
  ])('rejects %j', (input) => {
    expect(normaliseMac(input)).toBeNull();
  });

  it('is idempotent and case/separator insensitive for any MAC', () => {
    const octet = fc.integer({ min: 0, max: 255 }).map((n) => n.toString(16).padStart(2, '0'));
    fc.assert(
      fc.property(
        fc.array(octet, { minLength: 6, maxLength: 6 }),
        fc.boolean(),
        fc.boolean(),
        (octets, upper, dash) => {
          const canonical = octets.join(':');
          let text = octets.join(dash ? '-' : ':');
          if (upper) text = text.toUpperCase();
          expect(normaliseMac(text)).toBe(canonical);
          expect(normaliseMac(canonical)).toBe(canonical);
        },
      ),
    );
  });

  it('names the node when a MAC is malformed', () => {
    let caught: unknown;
    try {
      requireMac('08:00:27', 'worker-7');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(BpaError);
    expect(caught).toMatchObject({ reason: 'InvalidMacAddress', kind: 'invalid' });
    expect((caught as Error).message).toContain('worker-7');
    expect((caught as Error).message).toContain('"08:00:27"');
  });

  it('accepts the short octets lease files may contain', () => {
    expect(normaliseLeaseMac('8:0:27:0:AB:d')).toBe('08:00:27:00:ab:0d');
    expect(normaliseLeaseMac('08:00:27:00:ab:0d')).toBe('08:00:27:00:ab:0d');
    expect(normaliseLeaseMac('08:00:27:00:ab')).toBeNull();
    expect(normaliseLeaseMac('080:0:27:0:ab:0d')).toBeNull();
  });
});
