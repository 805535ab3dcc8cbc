import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * OpenSSH known_hosts, read-only: `[marker] hosts keytype base64 [comment]` lines, where hosts is
 * a comma list of names, `[name]:port` forms, `*`/`?` wildcards, `!` negations, or one hashed
 * `|1|salt|hmac` entry. `@revoked` lines are honoured; `@cert-authority` lines are skipped
 * (certificates are not used here). Malformed lines are skipped, as OpenSSH does.
 */
export interface KnownHostEntry {
  /** Line number in the text (1-based), for messages. */
  line: number;
  revoked: boolean;
  hostPatterns: string;
  keyType: string;
  keyBlob: Buffer;
}

export function parseKnownHosts(text: string): KnownHostEntry[] {
  const entries: KnownHostEntry[] = [];
  text.split(/\r?\n/).forEach((raw, index) => {
    const fields = raw.trim().split(/\s+/);
    if (fields[0] === undefined || fields[0] === '' || fields[0].startsWith('#')) return;
    let revoked = false;
    if (fields[0].startsWith('@')) {
      if (fields[0] !== '@revoked') return;
      revoked = true;
      fields.shift();
    }
    const [hostPatterns, keyType, base64] = fields;
    if (!hostPatterns || !keyType || !base64 || !/^[A-Za-z0-9+/]+=*$/.test(base64)) return;
    const keyBlob = Buffer.from(base64, 'base64');
    if (keyTypeOfBlob(keyBlob) !== keyType) return;
    entries.push({ line: index + 1, revoked, hostPatterns, keyType, keyBlob });
  });
  return entries;
}

/** The name OpenSSH looks up: `host` on port 22, `[host]:port` otherwise. */
export function knownHostsName(host: string, port: number): string {
  const name = host.toLowerCase();
  return port === 22 ? name : `[${name}]:${port}`;
}

/** Entries whose host patterns match `host` on `port`. */
export function entriesFor(entries: readonly KnownHostEntry[], host: string, port: number): KnownHostEntry[] {
  const name = knownHostsName(host, port);
  return entries.filter((entry) => hostPatternsMatch(entry.hostPatterns, name));
}

function hostPatternsMatch(patterns: string, name: string): boolean {
  if (patterns.startsWith('|1|')) return hashedMatch(patterns, name);
  let matched = false;
  for (const pattern of patterns.split(',')) {
    const negated = pattern.startsWith('!');
    if (!globMatch(negated ? pattern.slice(1) : pattern, name)) continue;
    if (negated) return false;
    matched = true;
  }
  return matched;
}

function hashedMatch(entry: string, name: string): boolean {
  const [, , saltBase64, hashBase64] = entry.split('|');
  if (!saltBase64 || !hashBase64) return false;
  const expected = Buffer.from(hashBase64, 'base64');
  const actual = createHmac('sha1', Buffer.from(saltBase64, 'base64')).update(name).digest();
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

function globMatch(pattern: string, name: string): boolean {
  const escaped = pattern
    .toLowerCase()
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${escaped}$`).test(name);
}

/** The key type named at the start of an SSH public key blob (`ssh-ed25519`, `ssh-rsa`, ...). */
export function keyTypeOfBlob(blob: Buffer): string | undefined {
  if (blob.length < 4) return undefined;
  const length = blob.readUInt32BE(0);
  if (length === 0 || length > 64 || blob.length < 4 + length) return undefined;
  return blob.subarray(4, 4 + length).toString('latin1');
}

/** OpenSSH's fingerprint format: `SHA256:` + unpadded base64 of the SHA-256 of the key blob. */
export function sha256Fingerprint(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/** Host key algorithms ssh2 may negotiate for the key types known_hosts records. */
export function hostKeyAlgorithmsFor(keyTypes: readonly string[]): string[] {
  return [
    ...new Set(
      keyTypes.flatMap((type) => (type === 'ssh-rsa' ? ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'] : [type])),
    ),
  ];
}
