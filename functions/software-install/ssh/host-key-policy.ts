import { z } from 'zod';
import {
  entriesFor,
  hostKeyAlgorithmsFor,
  keyTypeOfBlob,
  knownHostsName,
  parseKnownHosts,
  sha256Fingerprint,
} from './known-hosts.js';

export const sha256FingerprintSchema = z
  .string()
  .regex(/^SHA256:[A-Za-z0-9+/]{43}$/, 'an OpenSSH SHA256 fingerprint (SHA256:<43 base64 characters>)');

/**
 * How one host's key is checked. There is no "accept anything" mode: a session without a
 * policy is refused before connecting.
 * - known-hosts: the key must be listed for the host (`host` or `[host]:port`) in this text.
 * - trust-on-first-use: with no recorded fingerprint, any key is accepted and its fingerprint
 *   returned for the caller to record; with one, the key must have exactly that fingerprint.
 */
export const hostKeyPolicySchema = z.discriminatedUnion('mode', [
  z.object({ mode: z.literal('known-hosts'), knownHosts: z.string() }),
  z.object({
    mode: z.literal('trust-on-first-use'),
    expectedFingerprint: sha256FingerprintSchema.optional(),
  }),
]);
export type HostKeyPolicy = z.infer<typeof hostKeyPolicySchema>;

export type HostKeyRefusalReason = 'HostKeyUnknown' | 'HostKeyChanged' | 'HostKeyRevoked';

export type HostKeyDecision =
  | { accepted: true; fingerprint: string; firstUse: boolean }
  | { accepted: false; fingerprint: string; reason: HostKeyRefusalReason; message: string };

const refused = (host: string, fingerprint: string, reason: HostKeyRefusalReason, detail: string) =>
  ({
    accepted: false,
    fingerprint,
    reason,
    message: `Host key verification failed for ${host}: ${detail}`,
  }) as const;

/** Decides whether the key a host presented (raw SSH public key blob) is the right one. */
export function verifyHostKey(
  policy: HostKeyPolicy,
  host: string,
  port: number,
  keyBlob: Buffer,
): HostKeyDecision {
  const fingerprint = sha256Fingerprint(keyBlob);
  const keyType = keyTypeOfBlob(keyBlob) ?? 'unknown';
  if (policy.mode === 'trust-on-first-use') {
    const expected = policy.expectedFingerprint;
    if (expected === undefined) return { accepted: true, fingerprint, firstUse: true };
    if (expected === fingerprint) return { accepted: true, fingerprint, firstUse: false };
    return refused(
      host,
      fingerprint,
      'HostKeyChanged',
      `the host key has changed: expected ${expected} (recorded on first use) but the host presented ${keyType} ${fingerprint}`,
    );
  }

  const entries = entriesFor(parseKnownHosts(policy.knownHosts), host, port);
  const sameKey = entries.filter((entry) => entry.keyBlob.equals(keyBlob));
  const revoked = sameKey.find((entry) => entry.revoked);
  if (revoked) {
    return refused(
      host,
      fingerprint,
      'HostKeyRevoked',
      `the ${keyType} key ${fingerprint} is marked @revoked in known_hosts (line ${revoked.line})`,
    );
  }
  if (sameKey.length > 0) return { accepted: true, fingerprint, firstUse: false };
  const sameType = entries.find((entry) => !entry.revoked && entry.keyType === keyType);
  if (sameType) {
    return refused(
      host,
      fingerprint,
      'HostKeyChanged',
      `the host key has changed: known_hosts line ${sameType.line} has ${sameType.keyType} ${sha256Fingerprint(sameType.keyBlob)} but the host presented ${fingerprint}`,
    );
  }
  return refused(
    host,
    fingerprint,
    'HostKeyUnknown',
    `no ${keyType} key for ${knownHostsName(host, port)} in known_hosts (the host presented ${fingerprint})`,
  );
}

/**
 * Host key algorithms to offer: under known-hosts, only the types recorded for the host (as
 * OpenSSH prefers them), so a server with several keys presents one we can check.
 */
export function hostKeyAlgorithmsForPolicy(
  policy: HostKeyPolicy,
  host: string,
  port: number,
): string[] | undefined {
  if (policy.mode !== 'known-hosts') return undefined;
  const types = entriesFor(parseKnownHosts(policy.knownHosts), host, port)
    .filter((entry) => !entry.revoked)
    .map((entry) => entry.keyType);
  return types.length > 0 ? hostKeyAlgorithmsFor(types) : undefined;
}
