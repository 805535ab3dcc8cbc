/** The download URL signature (shared/storage/signed-url.ts) and what host-lookup does with an expired one. */
import { describe, expect, it } from '@jest/globals';
import { hostImageFor } from '../../../shared/core/host-image.js';
import { checkSignature, signDownloadUrl, urlKeysSchema } from '../../../shared/storage/signed-url.js';
import type { Image } from '../../../shared/schemas/image.js';

const oldKey = { id: 'old', secret: 'o'.repeat(40) };
const newKey = { id: 'new', secret: 'n'.repeat(40) };
const target = { namespace: 'alpha', name: 'beta.os.x', uid: 'uid-1', kind: 'image' as const };
const inAnHour = new Date(Date.now() + 3600_000);
const query = (url: string) => new URL(url).searchParams;

describe('signed download URLs', () => {
  it('verifies with any listed key, so a rotation keeps the URLs the old key signed', () => {
    const url = signDownloadUrl('http://d', target, inAnHour, [oldKey]);
    expect(checkSignature(query(url), target, [newKey, oldKey])).toMatchObject({ ok: true, uid: 'uid-1' });
    expect(checkSignature(query(url), target, [newKey])).toMatchObject({
      ok: false,
      reason: 'InvalidSignature',
    });
    expect(query(signDownloadUrl('http://d', target, inAnHour, [newKey, oldKey])).get('kid')).toBe('new');
  });

  it('refuses another name, another kind and an expired URL', () => {
    const url = signDownloadUrl('http://d', target, inAnHour, [oldKey]);
    expect(checkSignature(query(url), { ...target, name: 'beta.os.y' }, [oldKey]).ok).toBe(false);
    expect(checkSignature(query(url), { ...target, kind: 'checksum' }, [oldKey]).ok).toBe(false);
    const past = signDownloadUrl('http://d', target, new Date(Date.now() - 1000), [oldKey]);
    expect(checkSignature(query(past), target, [oldKey])).toMatchObject({ ok: false, reason: 'UrlExpired' });
    expect(checkSignature(new URLSearchParams(), target, [oldKey])).toMatchObject({
      reason: 'SignatureRequired',
    });
  });

  it('parses IMAGE_URL_KEYS and refuses short secrets and duplicate ids', () => {
    expect(urlKeysSchema.parse(`a:${'x'.repeat(32)}, b:${'y'.repeat(32)}`)).toHaveLength(2);
    expect(urlKeysSchema.safeParse('a:short').success).toBe(false);
    expect(urlKeysSchema.safeParse(`a:${'x'.repeat(32)},a:${'y'.repeat(32)}`).success).toBe(false);
    expect(urlKeysSchema.safeParse(undefined).success).toBe(false);
  });

  it('never gives a host a URL that has expired', () => {
    const image = {
      apiVersion: 'bpa.akraino.org/v1alpha1',
      kind: 'Image',
      metadata: { name: 'beta.os.x', namespace: 'alpha' },
      spec: { type: 'os', owner: 'alpha', clusterName: 'beta', imageName: 'x', length: 1 },
      status: { phase: 'Ready', url: 'http://d/images/alpha/beta.os.x?sig', sha256: 'a'.repeat(64) },
    } as Image;
    expect(hostImageFor(image).url).toBe(image.status!.url);
    const expired = {
      ...image,
      status: { ...image.status, urlExpiresAt: new Date(Date.now() - 1).toISOString() },
    };
    expect(() => hostImageFor(expired)).toThrow(/download URL expired/);
  });
});
