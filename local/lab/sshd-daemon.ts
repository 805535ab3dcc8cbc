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

/** A host as these helpers see it: its address, its directory (keys, config, `sshd.log`), its sshd. */
export interface SshdHostState {
  host: { ip: string };
  dir: string;
  process?: ChildProcess;
}

/**
 * The sshd_config lines every host has: one address and port, its own host key and pid file,
 * key authentication only, no PAM, no TTY, no forwarding, room for many sessions at once (the
 * fan-out benchmark and load tests). `extra` adds the host kind's own lines. Written to
 * `<dir>/sshd_config`: its path.
 */
export async function writeSshdConfig(
  state: SshdHostState,
  options: { port: number; authorizedKeysFile: string; extra: readonly string[] },
): Promise<string> {
  const path = join(state.dir, 'sshd_config');
  const lines = [
    `ListenAddress ${state.host.ip}`,
    `Port ${options.port}`,
    `HostKey ${join(state.dir, 'host_ed25519_key')}`,
    `PidFile ${join(state.dir, 'sshd.pid')}`,
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
  ];
  await writeFile(path, lines.join('\n'));
  return path;
}

/** Spawns `argv` (`sshd -D`, or what execs it), its output appended to `logPath`. */
function spawnSshd(argv: readonly string[], logPath: string): ChildProcess {
  const log = openSync(logPath, 'a');
  const [command, ...args] = argv;
  const child = spawn(command!, args, { stdio: ['ignore', log, log] });
  closeSync(log);
  return child;
}

/** True once `child` (an sshd) greets on ip:port within 15 s; false when it exits or never does. */
async function greets(child: ChildProcess, ip: string, port: number): Promise<boolean> {
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
 * Spawns the host's sshd (`argv`: `sshd -D`, or what execs it; its log `<dir>/sshd.log`) and
 * waits until it greets on `port`. When it exits or never greets, `stop` ends it: false.
 */
export async function launchSshd<S extends SshdHostState>(
  state: S,
  argv: readonly string[],
  port: number,
  stop: (state: S) => Promise<void>,
): Promise<boolean> {
  const child = spawnSshd(argv, join(state.dir, 'sshd.log'));
  state.process = child;
  const ok = await greets(child, state.host.ip, port);
  if (!ok) await stop(state);
  return ok;
}

/**
 * Starts every host's sshd on one port: `port`, or one free on all their addresses, picked again
 * (up to five times) when another process takes it before sshd binds. The port they run on.
 */
export async function startOnOnePort<S extends SshdHostState>(options: {
  states: readonly S[];
  port?: number;
  /** Starts the host's sshd on `port`: true once it greets. */
  start(state: S, port: number): Promise<boolean>;
  stop(state: S): Promise<void>;
  /** What did not start, for the error: `sshd`. */
  what: string;
}): Promise<number> {
  const { states } = options;
  for (let attempt = 1; ; attempt++) {
    const port = options.port ?? (await freePortOnAll(states.map((s) => s.host.ip)));
    const started = await Promise.all(states.map((s) => options.start(s, port)));
    if (started.every(Boolean)) return port;
    await Promise.all(states.map((s) => options.stop(s)));
    if (attempt === 5 || options.port !== undefined) {
      const logs = await Promise.all(
        states.map((s) => readFile(join(s.dir, 'sshd.log'), 'utf8').catch(() => '')),
      );
      throw new Error(`${options.what} did not start on port ${port}:\n${logs.join('\n')}`);
    }
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
