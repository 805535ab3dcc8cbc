import { createHmac } from 'node:crypto';
import ssh2 from 'ssh2';
import {
  hostKeyAlgorithmsForPolicy,
  verifyHostKey,
} from '../../../functions/software-install/ssh/host-key-policy.js';
import { parseKnownHosts, sha256Fingerprint } from '../../../functions/software-install/ssh/known-hosts.js';
import { generateEd25519KeyPair } from '../../../local/lab/ssh-keys.js';

const keyBlob = () => {
  const pair = generateEd25519KeyPair();
  return Buffer.from(pair.public.split(' ')[1] as string, 'base64');
};
const line = (hosts: string, blob: Buffer) => `${hosts} ssh-ed25519 ${blob.toString('base64')} comment`;
const knownHosts = (text: string) => ({ mode: 'known-hosts', knownHosts: text }) as const;

const key = keyBlob();
const other = keyBlob();

test('fingerprint: SHA256, unpadded base64, as OpenSSH prints it', () => {
  const fingerprint = sha256Fingerprint(key);
  expect(fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
});

test.each([
  ['plain name on port 22', '10.0.0.5', 22, '10.0.0.5'],
  ['[host]:port', '10.0.0.5', 2222, '[10.0.0.5]:2222'],
  ['one of a comma list', '10.0.0.5', 22, 'node-a,10.0.0.5'],
  ['wildcard', '10.0.0.5', 22, '10.0.0.*'],
  ['? wildcard with port', '10.0.0.5', 2222, '[10.0.0.?]:2222'],
])('accepts the key listed for the host: %s', (_, host, port, patterns) => {
  expect(verifyHostKey(knownHosts(line(patterns, key)), host, port, key)).toEqual({
    accepted: true,
    fingerprint: sha256Fingerprint(key),
    firstUse: false,
  });
});

test('a plain entry does not cover another port, and a negation excludes a host', () => {
  expect(verifyHostKey(knownHosts(line('10.0.0.5', key)), '10.0.0.5', 2222, key)).toMatchObject({
    accepted: false,
    reason: 'HostKeyUnknown',
  });
  expect(verifyHostKey(knownHosts(line('10.0.0.*,!10.0.0.5', key)), '10.0.0.5', 22, key)).toMatchObject({
    accepted: false,
    reason: 'HostKeyUnknown',
  });
});

test('hashed entries', () => {
  const salt = Buffer.from('0123456789abcdef0123');
  const hash = createHmac('sha1', salt).update('[10.0.0.5]:2222').digest('base64');
  const hashed = line(`|1|${salt.toString('base64')}|${hash}`, key);
  expect(verifyHostKey(knownHosts(hashed), '10.0.0.5', 2222, key).accepted).toBe(true);
  expect(verifyHostKey(knownHosts(hashed), '10.0.0.6', 2222, key).accepted).toBe(false);
});

test('a different key of the same type is a changed key, naming both fingerprints', () => {
  const decision = verifyHostKey(knownHosts(`# comment\n\n${line('10.0.0.5', other)}`), '10.0.0.5', 22, key);
  expect(decision).toEqual({
    accepted: false,
    fingerprint: sha256Fingerprint(key),
    reason: 'HostKeyChanged',
    message: `Host key verification failed for 10.0.0.5: the host key has changed: known_hosts line 3 has ssh-ed25519 ${sha256Fingerprint(other)} but the host presented ${sha256Fingerprint(key)}`,
  });
});

test('@revoked keys are refused; @cert-authority and malformed lines are skipped', () => {
  const text = [`@revoked ${line('10.0.0.5', key)}`, line('10.0.0.5', key)].join('\n');
  expect(verifyHostKey(knownHosts(text), '10.0.0.5', 22, key)).toMatchObject({ reason: 'HostKeyRevoked' });
  expect(
    parseKnownHosts(`@cert-authority ${line('*', key)}\ngarbage\n10.0.0.5 ssh-rsa !!!\n${line('x', key)}`),
  ).toHaveLength(1);
  // The type field must name the key actually encoded.
  expect(parseKnownHosts(`10.0.0.5 ssh-rsa ${key.toString('base64')}`)).toHaveLength(0);
});

test('trust on first use', () => {
  const fingerprint = sha256Fingerprint(key);
  expect(verifyHostKey({ mode: 'trust-on-first-use' }, 'h', 22, key)).toEqual({
    accepted: true,
    fingerprint,
    firstUse: true,
  });
  expect(
    verifyHostKey({ mode: 'trust-on-first-use', expectedFingerprint: fingerprint }, 'h', 22, key),
  ).toEqual({
    accepted: true,
    fingerprint,
    firstUse: false,
  });
  expect(
    verifyHostKey(
      { mode: 'trust-on-first-use', expectedFingerprint: sha256Fingerprint(other) },
      'h',
      22,
      key,
    ),
  ).toMatchObject({
    accepted: false,
    reason: 'HostKeyChanged',
    message: `Host key verification failed for h: the host key has changed: expected ${sha256Fingerprint(other)} (recorded on first use) but the host presented ssh-ed25519 ${fingerprint}`,
  });
});

test('offers only the host key algorithms known_hosts records for the host', () => {
  const rsa = ssh2.utils.generateKeyPairSync('rsa', { bits: 2048 });
  const text = `10.0.0.5 ${rsa.public.split(' ').slice(0, 2).join(' ')}\n${line('10.0.0.6', key)}`;
  expect(hostKeyAlgorithmsForPolicy(knownHosts(text), '10.0.0.5', 22)).toEqual([
    'rsa-sha2-512',
    'rsa-sha2-256',
    'ssh-rsa',
  ]);
  expect(hostKeyAlgorithmsForPolicy(knownHosts(text), '10.0.0.6', 22)).toEqual(['ssh-ed25519']);
  expect(hostKeyAlgorithmsForPolicy(knownHosts(text), '10.0.0.7', 22)).toBeUndefined();
  expect(hostKeyAlgorithmsForPolicy({ mode: 'trust-on-first-use' }, '10.0.0.5', 22)).toBeUndefined();
});
