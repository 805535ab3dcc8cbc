/**
 * What every real OpenSSH host here shares (the lab's recorder hosts, local/lab/openssh-hosts.ts,
 * and the tests' Debian-root hosts, test/support/debian-host.ts): keys made by ssh-keygen, the
 * common sshd_config, an sshd child that counts as started once it greets, and one port shared
 * by all of a lab's addresses. Only async child processes here: a blocking `ssh` call would
 * freeze an ssh2 Server in the same process.
 */
import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, openSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePortOnAll } from '../control-plane/free-port.js';

const run = promisify(execFile);

export const sshdPath = '/usr/sbin/sshd';

/** A new unencrypted ed25519 key pair at `path` and `path.pub`. */
export async function generateSshKey(path: string, comment: string): Promise<void> {
  await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', path]);
}

/**
 * The client key the hosts accept: `<root>/client_key`, its public half authorised in
 * `<root>/authorized_keys` (the file every host's AuthorizedKeysFile names).
 */
export async function newClientKey(root: string): Promise<{ privateKey: string; publicKey: string }> {
  await generateSshKey(join(root, 'client_key'), 'bpa-test-client');
  const privateKey = await readFile(join(root, 'client_key'), 'utf8');
  const publicKey = (await readFile(join(root, 'client_key.pub'), 'utf8')).trim();
  await writeFile(join(root, 'authorized_keys'), publicKey + '\n', { mode: 0o644 });
  return { privateKey, publicKey };
}

/** The host name OpenSSH writes in known_hosts: `ip` on port 22, `[ip]:port` otherwise. */
export const knownHostsName = (ip: string, port: number) => (port === 22 ? ip : `[${ip}]:${port}`);

/**
 * The sshd_config lines every host has: one address and port, its own host key and pid file,
 * key authentication only, no PAM, no TTY, no forwarding, room for many sessions at once (the
 * fan-out benchmark and load tests). `extra` adds the host kind's own lines.
 */
export function sshdConfig(options: {
  ip: string;
  port: number;
  /** The directory with `host_ed25519_key`; `sshd.pid` goes there. */
  dir: string;
  authorizedKeysFile: string;
  extra: readonly string[];
}): string {
  return [
    `ListenAddress ${options.ip}`,
    `Port ${options.port}`,
    `HostKey ${join(options.dir, 'host_ed25519_key')}`,
    `PidFile ${join(options.dir, 'sshd.pid')}`,
    `AuthorizedKeysFile ${options.authorizedKeysFile}`,
    ...options.extra,
    'AuthenticationMethods publickey',
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    'UsePAM no',
    'StrictModes no',
    'PermitRootLogin prohibit-password',
    'UseDNS no',
    'PrintMotd no',
    'PrintLastLog no',
    'PermitTTY no',
    'X11Forwarding no',
    'AllowTcpForwarding no',
    'MaxStartups 200',
    'MaxSessions 50',
    'LogLevel VERBOSE',
    '',
  ].join('\n');
}

/** Spawns `argv` (`sshd -D`, or what execs it), its output appended to `logPath`. */
export function spawnSshd(argv: readonly string[], logPath: string): ChildProcess {
  const log = openSync(logPath, 'a');
  const [command, ...args] = argv;
  const child = spawn(command!, args, { stdio: ['ignore', log, log] });
  closeSync(log);
  return child;
}

/** True once `child` (an sshd) greets on ip:port within 15 s; false when it exits or never does. */
export async function greets(child: ChildProcess, ip: string, port: number): Promise<boolean> {
  const exited = once(child, 'exit').then(() => false);
  const deadline = Date.now() + 15000;
  const greeted = (async () => {
    while (Date.now() < deadline && child.exitCode === null && child.signalCode === null) {
      if (await sshBanner(ip, port)) return true;
      await new Promise((r) => setTimeout(r, 50));
    }
    return false;
  })();
  return Promise.race([exited, greeted]);
}

/** Stops a running sshd child: SIGTERM, SIGKILL after 5 s. */
export async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

/**
 * Starts every host's sshd on one port: `port`, or one free on all of `ips`, picked again (up to
 * five times) when another process takes it before sshd binds. The port they run on.
 */
export async function startOnOnePort(options: {
  ips: readonly string[];
  port?: number;
  /** Starts every host on `port`: true when each one greets. */
  start(port: number): Promise<boolean>;
  stopAll(): Promise<void>;
  /** The hosts' sshd logs, for the error. */
  logs(): Promise<string[]>;
  /** What did not start, for the error: `sshd`. */
  what: string;
}): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const port = options.port ?? (await freePortOnAll(options.ips));
    if (await options.start(port)) return port;
    await options.stopAll();
    if (attempt === 5 || options.port !== undefined)
      throw new Error(`${options.what} did not start on port ${port}:\n${(await options.logs()).join('\n')}`);
  }
}

/** True when an SSH server greets on ip:port. */
export function sshBanner(ip: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: ip, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(2000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('data', (data) => done(data.toString('latin1').startsWith('SSH-2.0-')));
  });
}
