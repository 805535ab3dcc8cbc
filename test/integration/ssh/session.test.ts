import { execFile } from 'node:child_process';
import net from 'node:net';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { runSshCommand } from '../../../functions/software-install/ssh/session.js';
import type { SshSessionOptions } from '../../../functions/software-install/ssh/session.js';
import { startSshHosts } from '../../support/sshd.js';
import type { SshHosts, SshTestHost } from '../../support/sshd.js';
import { generateEd25519KeyPair } from '../../../local/lab/ssh-keys.js';

const run = promisify(execFile);

let lab: SshHosts;
let ok: SshTestHost;
let failing: SshTestHost;
let hanging: SshTestHost;
let down: SshTestHost;
let rekeyed: SshTestHost;

beforeAll(async () => {
  lab = await startSshHosts({
    count: 5,
    behaviours: [
      { kind: 'succeed' },
      { kind: 'fail', exitCode: 100, stderr: 'E: Unable to locate package nosuchpkg' },
      { kind: 'hang', seconds: 60 },
    ],
  });
  [ok, failing, hanging, down, rekeyed] = lab.hosts as [
    SshTestHost,
    SshTestHost,
    SshTestHost,
    SshTestHost,
    SshTestHost,
  ];
});
afterAll(() => lab?.stopAll());

const options = (host: SshTestHost, overrides: Partial<SshSessionOptions> = {}): SshSessionOptions => ({
  host: host.ip,
  port: host.port,
  username: lab.username,
  privateKey: lab.privateKey,
  hostKeyPolicy: { mode: 'known-hosts', knownHosts: lab.knownHosts() },
  connectTimeoutMs: 15000,
  commandTimeoutMs: 30000,
  ...overrides,
});

test('runs the command, waits for exit 0 and reports the key fingerprint OpenSSH computes', async () => {
  const result = await runSshCommand(options(ok), 'echo the exact command');
  expect(result.error).toBeUndefined();
  expect(result.exitCode).toBe(0);
  expect(result.hostKeyFingerprint).toBe(ok.hostKeyFingerprint);
  expect(result.stdoutTail).toContain('Setting up packages (recorded, not installed)');
  expect(ok.commands().at(-1)).toBe('echo the exact command');
});

test('accepts a host listed in a hashed known_hosts written by ssh-keygen -H', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'bpa-known-hosts-'));
  try {
    const file = join(dir, 'known_hosts');
    await writeFile(file, lab.knownHosts());
    await run('ssh-keygen', ['-H', '-f', file]);
    const hashed = await readFile(file, 'utf8');
    expect(hashed).not.toContain(ok.ip);
    const result = await runSshCommand(
      options(ok, { hostKeyPolicy: { mode: 'known-hosts', knownHosts: hashed } }),
      'hashed',
    );
    expect(result.error).toBeUndefined();
    expect(result.exitCode).toBe(0);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('refuses a host missing from known_hosts, before any command', async () => {
  const before = ok.commands().length;
  const others = lab.hosts.filter((h) => h !== ok).map((h) => h.knownHostsLine);
  const result = await runSshCommand(
    options(ok, { hostKeyPolicy: { mode: 'known-hosts', knownHosts: others.join('\n') } }),
    'never run',
  );
  expect(result.exitCode).toBeNull();
  expect(result.error?.reason).toBe('HostKeyUnknown');
  expect(result.error?.message).toBe(
    `Host key verification failed for ${ok.ip}: no ssh-ed25519 key for [${ok.ip}]:${ok.port} in known_hosts (the host presented ${ok.hostKeyFingerprint})`,
  );
  expect(ok.commands()).toHaveLength(before);
});

test('trust on first use accepts and reports the fingerprint; the recorded one is then enforced', async () => {
  const first = await runSshCommand(
    options(rekeyed, { hostKeyPolicy: { mode: 'trust-on-first-use' } }),
    'first',
  );
  expect(first.error).toBeUndefined();
  expect(first.hostKeyFirstUse).toBe(true);
  expect(first.hostKeyFingerprint).toBe(rekeyed.hostKeyFingerprint);
  const recorded = first.hostKeyFingerprint as string;
  const staleKnownHosts = lab.knownHosts();

  const again = await runSshCommand(
    options(rekeyed, { hostKeyPolicy: { mode: 'trust-on-first-use', expectedFingerprint: recorded } }),
    'second',
  );
  expect(again.error).toBeUndefined();
  expect(again.hostKeyFirstUse).toBeUndefined();

  await lab.changeHostKey(rekeyed);
  expect(rekeyed.hostKeyFingerprint).not.toBe(recorded);
  const commandsBefore = rekeyed.commands();

  const underTofu = await runSshCommand(
    options(rekeyed, { hostKeyPolicy: { mode: 'trust-on-first-use', expectedFingerprint: recorded } }),
    'must not run',
  );
  expect(underTofu.error?.reason).toBe('HostKeyChanged');
  expect(underTofu.error?.message).toBe(
    `Host key verification failed for ${rekeyed.ip}: the host key has changed: expected ${recorded} (recorded on first use) but the host presented ssh-ed25519 ${rekeyed.hostKeyFingerprint}`,
  );

  const underKnownHosts = await runSshCommand(
    options(rekeyed, { hostKeyPolicy: { mode: 'known-hosts', knownHosts: staleKnownHosts } }),
    'must not run either',
  );
  expect(underKnownHosts.error?.reason).toBe('HostKeyChanged');
  expect(underKnownHosts.error?.message).toMatch(
    new RegExp(
      `^Host key verification failed for ${rekeyed.ip.replace(/\./g, '\\.')}: the host key has changed: known_hosts line \\d+ has ssh-ed25519 ${recorded.replace(/[+/]/g, '\\$&')} but the host presented ${rekeyed.hostKeyFingerprint.replace(/[+/]/g, '\\$&')}$`,
    ),
  );
  expect(rekeyed.commands()).toEqual(commandsBefore);
});

test('a failing command reports its exit code and the end of its stderr', async () => {
  const result = await runSshCommand(options(failing), 'apt-get install nosuchpkg');
  expect(result.exitCode).toBe(100);
  expect(result.stderrTail).toEqual(['E: Unable to locate package nosuchpkg']);
  expect(result.error).toEqual({
    reason: 'CommandFailed',
    message: `The command exited with code 100 on ${failing.ip}:${failing.port}: E: Unable to locate package nosuchpkg`,
  });
});

test('a host that hangs after connecting is cut off at the command timeout', async () => {
  const result = await runSshCommand(options(hanging, { commandTimeoutMs: 2000 }), 'hang');
  expect(result.exitCode).toBeNull();
  expect(result.error).toEqual({
    reason: 'CommandTimeout',
    message: `The command did not finish within 2s on ${hanging.ip}:${hanging.port}; the session was closed`,
  });
});

test('a host that is down is reported as refusing connections', async () => {
  await lab.stop(down);
  const result = await runSshCommand(options(down), 'unreachable');
  expect(result.exitCode).toBeNull();
  expect(result.hostKeyFingerprint).toBeUndefined();
  expect(result.error).toEqual({
    reason: 'ConnectFailed',
    message: `Cannot connect to ${down.ip}:${down.port}: connection refused`,
  });
  await lab.restart(down);
  expect((await runSshCommand(options(down), 'back')).exitCode).toBe(0);
});

test('a host that accepts TCP but never speaks SSH is cut off at the connect timeout', async () => {
  const silent = net.createServer(() => undefined);
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const port = (silent.address() as net.AddressInfo).port;
  try {
    const result = await runSshCommand(
      options(ok, { host: '127.0.0.1', port, connectTimeoutMs: 1500 }),
      'never sent',
    );
    expect(result.error).toEqual({
      reason: 'ConnectTimeout',
      message: `Timed out after 1.5s connecting to 127.0.0.1:${port} (TCP connect, SSH handshake and authentication)`,
    });
  } finally {
    silent.close();
  }
});

test('a key the host does not authorise fails authentication', async () => {
  const other = generateEd25519KeyPair();
  const result = await runSshCommand(options(ok, { privateKey: other.private }), 'not allowed');
  expect(result.error?.reason).toBe('AuthenticationFailed');
  expect(result.error?.message).toBe(
    `SSH authentication failed for ${lab.username}@${ok.ip}:${ok.port}: the server did not accept the key`,
  );
});

test('a session without a host key policy is refused before connecting', async () => {
  const before = ok.commands().length;
  const result = await runSshCommand(
    { ...options(ok), hostKeyPolicy: undefined } as unknown as SshSessionOptions,
    'no policy',
  );
  expect(result.error?.reason).toBe('InvalidSessionOptions');
  expect(result.error?.message).toMatch(/^Invalid SSH session options: hostKeyPolicy: /);
  expect(ok.commands()).toHaveLength(before);
});
