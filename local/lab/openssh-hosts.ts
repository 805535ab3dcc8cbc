/**
 * Real OpenSSH servers for the demo's lab, tests and benchmarks: one `sshd -D` per host address
 * (127.0.0.N, N from 2 upward, unless given) on one shared port, so each lab node has its own IP
 * as in a real cluster. Each host has its own ed25519 host key and config, and a ForceCommand
 * recorder that writes the exact `$SSH_ORIGINAL_COMMAND` of every session to a file, then behaves
 * as told: succeed, fail with a code and stderr, hang, take a second (all instead of running the
 * command), `shell` (run the command for real, as the login user: Ansible's modules) or `lab`
 * (the demo's hosts: apt-get commands are recorded and answered, never run; anything else, such
 * as the KUD stand-in's `ansible -m ping`, runs for real).
 *
 * Needs root (sshd privilege separation) and Debian's openssh-server (scripts/prereqs.sh).
 * Only async child processes here: a blocking `ssh` call would freeze an ssh2 Server in the
 * same process.
 */
import { execFile } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { behaviourScript, recorderScript, type SshHostBehaviour } from './recorder-scripts.js';
import {
  generateSshKey,
  knownHostsName,
  launchSshd,
  newClientKey,
  sshdPath,
  startOnOnePort,
  stopChild,
  writeSshdConfig,
} from './sshd-daemon.js';

export type { SshHostBehaviour } from './recorder-scripts.js';
export { sshBanner } from './sshd-daemon.js';

const run = promisify(execFile);

/** Default login user of the test hosts (not root: see StartSshHostsOptions.username). */
export const testSshUser = 'bpa-ssh-test';

export interface SshTestHost {
  /** 127.0.0.N */
  ip: string;
  port: number;
  /** Current host key, as `ssh-keygen -lf` prints it: `SHA256:...`. */
  hostKeyFingerprint: string;
  /** `[ip]:port ssh-ed25519 AAAA...` (`ip ssh-ed25519 ...` on port 22) for a known_hosts text. */
  knownHostsLine: string;
  /** Every command sessions asked for, oldest first, exactly as sshd received it. */
  commands(): string[];
}

export interface SshHosts {
  hosts: SshTestHost[];
  port: number;
  /** The user the keys are authorised for. */
  username: string;
  privateKey: string;
  publicKey: string;
  /** known_hosts text with every host's current key. */
  knownHosts(): string;
  setBehaviour(host: SshTestHost | string, behaviour: SshHostBehaviour): Promise<void>;
  /** Stops a host's sshd: connections are then refused. */
  stop(host: SshTestHost | string): Promise<void>;
  restart(host: SshTestHost | string): Promise<void>;
  /** A new host key, as after a reinstall; the host is restarted with it. */
  changeHostKey(host: SshTestHost | string): Promise<void>;
  stopAll(): Promise<void>;
}

export interface StartSshHostsOptions {
  count: number;
  /** Per host, by position; missing ones succeed. */
  behaviours?: SshHostBehaviour[];
  /** First N of 127.0.0.N. Default 2. */
  firstAddress?: number;
  /** The hosts' addresses (then `count` is their number): loopback or the lab's own networks only. */
  addresses?: readonly string[];
  /** One port for every host (e.g. 22, as a rendered inventory says). Default: a free one. */
  port?: number;
  /**
   * Network namespace of each host, by position (the lab's hosts on the node's network); each
   * host's address must be one of its namespace's. Default: this process's namespace.
   */
  netns?: readonly (string | undefined)[];
  /**
   * The login user. Default: `testSshUser`, created if missing with /bin/sh as its shell, because
   * root's bash here sources a slow .bashrc (seconds per session). Pass 'root' to test root.
   */
  username?: string;
}

interface HostState {
  host: SshTestHost;
  index: number;
  dir: string;
  netns?: string;
  process?: ChildProcess;
}

export async function startSshHosts(options: StartSshHostsOptions): Promise<SshHosts> {
  if (process.getuid?.() !== 0) throw new Error('startSshHosts needs root: sshd must run as root');
  const username = options.username ?? testSshUser;
  if (username !== 'root') await ensureTestUser(username);
  await mkdir('/run/sshd', { recursive: true });

  const root = await mkdtemp(join(tmpdir(), 'bpa-sshd-'));
  // Non-root sessions read authorized_keys and write their records here.
  await chmod(root, 0o755);
  const { privateKey, publicKey } = await newClientKey(root);
  await writeFile(join(root, 'recorder.sh'), recorderScript, { mode: 0o755 });

  const firstAddress = options.firstAddress ?? 2;
  const states: HostState[] = [];
  const count = options.addresses?.length ?? options.count;
  for (let i = 0; i < count; i++) {
    const index = firstAddress + i;
    const ip = options.addresses?.[i] ?? `127.0.0.${index}`;
    const dir = join(root, 'hosts', String(index));
    await mkdir(join(dir, 'commands'), { recursive: true });
    await mkdir(join(dir, 'pids'), { recursive: true });
    await mkdir(join(dir, 'installs'), { recursive: true });
    await chmod(join(dir, 'installs'), 0o777);
    await chmod(join(dir, 'commands'), 0o777);
    await chmod(join(dir, 'pids'), 0o777);
    const netns = options.netns?.[i];
    const state: HostState = {
      index,
      dir,
      ...(netns ? { netns } : {}),
      host: {
        ip,
        port: 0,
        hostKeyFingerprint: '',
        knownHostsLine: '',
        commands: () => readCommands(join(dir, 'commands')),
      },
    };
    await writeBehaviour(state, options.behaviours?.[i] ?? { kind: 'succeed' });
    await newHostKey(state);
    states.push(state);
  }

  const byHost = (host: SshTestHost | string) => {
    const ip = typeof host === 'string' ? host : host.ip;
    const state = states.find((s) => s.host.ip === ip);
    if (!state) throw new Error(`no test SSH host ${ip}`);
    return state;
  };

  // A port free on every address; retried when another process takes it before sshd binds.
  const port = await startOnOnePort({
    states,
    ...(options.port !== undefined ? { port: options.port } : {}),
    start: (state, port) => startSshd(state, root, port, username),
    stop: stopSshd,
    what: 'sshd',
  });

  return {
    hosts: states.map((s) => s.host),
    port,
    username,
    privateKey,
    publicKey,
    knownHosts: () => states.map((s) => s.host.knownHostsLine).join('\n') + '\n',
    setBehaviour: (host, behaviour) => writeBehaviour(byHost(host), behaviour),
    stop: (host) => stopSshd(byHost(host)),
    restart: async (host) => {
      const state = byHost(host);
      await stopSshd(state);
      if (!(await startSshd(state, root, port, username)))
        throw new Error(`sshd for ${state.host.ip} did not restart`);
    },
    changeHostKey: async (host) => {
      const state = byHost(host);
      await stopSshd(state);
      await newHostKey(state);
      if (!(await startSshd(state, root, port, username)))
        throw new Error(`sshd for ${state.host.ip} did not restart`);
    },
    stopAll: async () => {
      await Promise.all(states.map(stopSshd));
      await Promise.all(states.map(killLeftoverSessions));
      await rm(root, { recursive: true, force: true });
    },
  };
}

async function writeBehaviour(state: HostState, behaviour: SshHostBehaviour): Promise<void> {
  const path = join(state.dir, 'behaviour.sh');
  await writeFile(path + '.tmp', behaviourScript(behaviour), { mode: 0o644 });
  await run('mv', ['-f', path + '.tmp', path]);
}

function readCommands(dir: string): string[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.cmd'))
    .sort()
    .map((name) => readFileSync(join(dir, name), 'utf8'));
}

async function newHostKey(state: HostState): Promise<void> {
  const keyPath = join(state.dir, 'host_ed25519_key');
  await rm(keyPath, { force: true });
  await rm(keyPath + '.pub', { force: true });
  await generateSshKey(keyPath, `bpa-test-host-${state.index}`);
  const { stdout } = await run('ssh-keygen', ['-l', '-E', 'sha256', '-f', keyPath + '.pub']);
  const fingerprint = stdout.split(' ')[1];
  if (!fingerprint?.startsWith('SHA256:')) throw new Error(`unexpected ssh-keygen -l output: ${stdout}`);
  state.host.hostKeyFingerprint = fingerprint;
  const [type, blob] = (await readFile(keyPath + '.pub', 'utf8')).trim().split(' ');
  state.host.knownHostsLine = `${knownHostsName(state.host.ip, state.host.port)} ${type} ${blob}`;
}

/** Starts the host's sshd and waits until it greets; false when it could not bind or start. */
async function startSshd(state: HostState, root: string, port: number, username: string): Promise<boolean> {
  state.host.port = port;
  state.host.knownHostsLine = state.host.knownHostsLine.replace(
    /^\S+ /,
    `${knownHostsName(state.host.ip, port)} `,
  );
  const configPath = await writeSshdConfig(state, {
    port,
    authorizedKeysFile: join(root, 'authorized_keys'),
    extra: [
      `AllowUsers ${username}`,
      'PubkeyAuthentication yes',
      'AllowAgentForwarding no',
      `ForceCommand ${join(root, 'recorder.sh')} ${state.dir}`,
    ],
  });
  const sshd = [sshdPath, '-D', '-e', '-f', configPath];
  // `ip netns exec` enters the namespace and execs sshd: the child's pid is sshd's.
  return launchSshd(
    state,
    state.netns ? ['ip', 'netns', 'exec', state.netns, ...sshd] : sshd,
    port,
    stopSshd,
  );
}

async function stopSshd(state: HostState): Promise<void> {
  const child = state.process;
  state.process = undefined;
  await stopChild(child);
}

/** Sessions left sleeping by a `hang` behaviour (their sshd session processes go with them). */
async function killLeftoverSessions(state: HostState): Promise<void> {
  const pidsDir = join(state.dir, 'pids');
  for (const name of await readdir(pidsDir).catch(() => [] as string[])) {
    const pid = Number(name);
    try {
      const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8');
      if (cmdline.startsWith('sleep')) process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

/** A login user for non-root tests: `/bin/sh`, unlocked for key auth with UsePAM no. */
export async function ensureTestUser(name: string): Promise<void> {
  // Two test workers may get here at once; useradd/usermod then fail on the passwd lock: retry.
  for (let attempt = 1; ; attempt++) {
    try {
      const entry = await run('getent', ['shadow', name]).then(
        ({ stdout }) => stdout,
        () => undefined,
      );
      if (entry === undefined) await run('useradd', ['--create-home', '--shell', '/bin/sh', name]);
      else if (entry.split(':')[1] !== '*') await run('usermod', ['-p', '*', name]);
      else return;
    } catch (error) {
      if (attempt === 20) throw error;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}
