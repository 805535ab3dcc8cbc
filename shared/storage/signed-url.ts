import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';

/**
 * Signed, expiring download URLs of images (contract §12): Ironic fetches an image with HEAD then
 * GET and no token, so the URL itself is the credential, like a presigned object-store URL. The
 * signature is an HMAC-SHA256 over what the URL names (namespace, Image name, the Image's uid,
 * image or checksum, expiry) with a key only the image service holds, so a URL cannot be guessed
 * from an image's name, moved to another image or kept past its expiry.
 *
 * Keys: `IMAGE_URL_KEYS` = `<id>:<secret>[,<id>:<secret>...]` (a Secret in the functions'
 * namespace). The first key signs; every listed key verifies, so a rotation is: put a new key
 * first, keep the old one listed until the URLs it signed have expired (IMAGE_URL_TTL_SECONDS),
 * then drop it.
 */

export const urlKeyIdPattern = /^[A-Za-z0-9_-]{1,32}$/;

export interface UrlKey {
  id: string;
  secret: string;
}

/** `IMAGE_URL_KEYS` parsed: at least one key, each id unique, each secret at least 32 characters. */
export const urlKeysSchema = z.preprocess(
  (value) =>
    typeof value === 'string'
      ? value
          .split(',')
          .map((entry) => entry.trim())
          .filter((entry) => entry !== '')
          .map((entry) => {
            const colon = entry.indexOf(':');
            return colon < 0
              ? { id: entry, secret: '' }
              : { id: entry.slice(0, colon), secret: entry.slice(colon + 1) };
          })
      : value,
  z
    .array(
      z.object({
        id: z.string().regex(urlKeyIdPattern, 'a key id is 1-32 letters, digits, "_" or "-"'),
        secret: z.string().min(32, 'a URL signing secret has at least 32 characters'),
      }),
      { error: 'IMAGE_URL_KEYS is required: <id>:<secret>[,<id>:<secret>...] (see docs/images.md)' },
    )
    .min(1, 'IMAGE_URL_KEYS needs at least one <id>:<secret>')
    .refine((keys) => new Set(keys.map((k) => k.id)).size === keys.length, 'key ids must be unique'),
);

/** What a download URL names. */
export interface SignedTarget {
  namespace: string;
  name: string;
  uid: string;
  /** The image's bytes or its `.sha256sum` line. */
  kind: 'image' | 'checksum';
}

/** The query parameters of a signed URL. */
export const signatureParams = ['uid', 'expires', 'kid', 'signature'] as const;

const payload = (target: SignedTarget, expires: number) =>
  `bpa-image-url/v1\n${target.namespace}\n${target.name}\n${target.uid}\n${target.kind}\n${expires}`;

const mac = (secret: string, data: string) => createHmac('sha256', secret).update(data).digest('base64url');

export const downloadPathOf = (target: Omit<SignedTarget, 'uid'>) =>
  `/images/${target.namespace}/${target.name}${target.kind === 'checksum' ? '.sha256sum' : ''}`;

/** `<base>/images/<ns>/<name>[.sha256sum]?uid=..&expires=..&kid=..&signature=..`, signed with the first key. */
export function signDownloadUrl(
  base: string,
  target: SignedTarget,
  expires: Date,
  keys: readonly UrlKey[],
): string {
  const key = keys[0];
  if (!key) throw new Error('no URL signing key');
  const seconds = Math.floor(expires.getTime() / 1000);
  const query = new URLSearchParams({
    uid: target.uid,
    expires: String(seconds),
    kid: key.id,
    signature: mac(key.secret, payload(target, seconds)),
  });
  return `${base.replace(/\/$/, '')}${downloadPathOf(target)}?${query.toString()}`;
}

export type SignatureCheck =
  | { ok: true; uid: string; expires: Date }
  | { ok: false; reason: 'SignatureRequired' | 'InvalidSignature' | 'UrlExpired'; message: string };

/**
 * Checks a request's query against the path's namespace, name and kind, before anything is read:
 * a wrong or tampered signature, an unknown key id and an expired URL all fail here, so a flood
 * of guesses costs one HMAC each and no API call.
 */
export function checkSignature(
  query: URLSearchParams,
  target: Omit<SignedTarget, 'uid'>,
  keys: readonly UrlKey[],
  now: Date = new Date(),
): SignatureCheck {
  const [uid, expires, kid, signature] = signatureParams.map((name) => query.get(name));
  if (!uid || !expires || !kid || !signature)
    return {
      ok: false,
      reason: 'SignatureRequired',
      message: 'Image downloads need a signed URL (the Image’s status.url); this one carries no signature',
    };
  const key = keys.find((k) => k.id === kid);
  const seconds = /^\d{1,12}$/.test(expires) ? Number(expires) : NaN;
  const invalid = {
    ok: false,
    reason: 'InvalidSignature',
    message: 'The download URL’s signature is not valid for this image',
  } as const;
  if (!key || !Number.isFinite(seconds)) return invalid;
  const expected = Buffer.from(mac(key.secret, payload({ ...target, uid }, seconds)));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return invalid;
  const at = new Date(seconds * 1000);
  if (at.getTime() <= now.getTime())
    return {
      ok: false,
      reason: 'UrlExpired',
      message: `The download URL expired at ${at.toISOString()}`,
    };
  return { ok: true, uid, expires: at };
}
