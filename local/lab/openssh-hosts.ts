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
import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chmod, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { readdirSync, readFileSync, openSync, closeSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { shellQuote } from '../../functions/software-install/ssh/command.js';
import { freePortOnAll } from '../control-plane/free-port.js';
import {
  attachedNotice,
  startedNotice,
  statusPrefix,
} from '../../functions/software-install/ssh/detached.js';

const run = promisify(execFile);
const sshdPath = '/usr/sbin/sshd';

export type SshHostBehaviour =
  /** Print a little apt-like output and exit 0. */
  | { kind: 'succeed' }
  /** Print `stderr` on stderr and exit with `exitCode`. */
  | { kind: 'fail'; exitCode: number; stderr: string }
  /** Accept the session and never answer within `seconds` (a hung host). */
  | { kind: 'hang'; seconds: number }
  /** Sleep `seconds`, then exit 0 (the fan-out benchmark's one-second command). */
  | { kind: 'slow'; seconds: number }
  /** Run the command for real, as the login user (Ansible's ping module needs a real Python). */
  | { kind: 'shell' }
  /** The demo lab: apt-get commands recorded and answered with marked output, others run for real. */
  | { kind: 'lab' };

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
  await run('ssh-keygen', [
    '-q',
    '-t',
    'ed25519',
    '-N',
    '',
    '-C',
    'bpa-test-client',
    '-f',
    join(root, 'client_key'),
  ]);
  const privateKey = await readFile(join(root, 'client_key'), 'utf8');
  const publicKey = (await readFile(join(root, 'client_key.pub'), 'utf8')).trim();
  await writeFile(join(root, 'authorized_keys'), publicKey + '\n', { mode: 0o644 });
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
  let port = 0;
  for (let attempt = 1; ; attempt++) {
    port = options.port ?? (await freePortOnAll(states.map((s) => s.host.ip)));
    const started = await Promise.all(states.map((s) => startSshd(s, root, port, username)));
    if (started.every(Boolean)) break;
    await Promise.all(states.map(stopSshd));
    if (attempt === 5 || options.port !== undefined) {
      const logs = await Promise.all(
        states.map((s) => readFile(join(s.dir, 'sshd.log'), 'utf8').catch(() => '')),
      );
      throw new Error(`sshd did not start on port ${port}:\n${logs.join('\n')}`);
    }
  }

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

/**
 * The installer's detached protocol (functions/software-install/ssh/detached.ts), spoken by
 * behaviour hosts: the start command is recorded (polls are not: a test counts installs) and the
 * behaviour runs as the detached install would, in the background, its output and exit status in
 * files of `installs/<id>`; a poll answers from them like the real poll script. The same id still
 * running is attached to, as on a real host. A `hang` host answers no session at all, start or
 * poll, as a hung host would. Runs before the recorder's own lines; the commands
 * are the installer's own single-quoted words, so `eval set --` splits them as sh would.
 */
const detachedInstallEmulation = `grep -q 'exec sleep' "$host_dir/behaviour.sh" || case $SSH_ORIGINAL_COMMAND in
*"${statusPrefix}"*|*"${startedNotice}"*)
  eval "set -- $SSH_ORIGINAL_COMMAND"
  while [ $# -gt 0 ] && [ "$1" != -c ]; do shift; done
  inst="$host_dir/installs/$4"
  case $SSH_ORIGINAL_COMMAND in
  *"${startedNotice}"*) ;;
  *)
    if [ -f "$inst/exit" ]; then st="exit $(cat "$inst/exit")"; elif [ -d "$inst" ]; then st=running; else st=missing; fi
    tail -n 19 "$inst/out" 2> /dev/null; tail -n 20 "$inst/err" >&2 2> /dev/null
    echo "${statusPrefix}$st"; exit 0 ;;
  esac
  record="$host_dir/commands/$(date +%s%N).$$"
  printf '%s' "$SSH_ORIGINAL_COMMAND" > "$record.tmp" && mv "$record.tmp" "$record.cmd"
  if [ -d "$inst" ] && [ ! -f "$inst/exit" ]; then echo "${attachedNotice} ($inst)"; exit 0; fi
  rm -rf "$inst" && mkdir -p "$inst"
  export host_dir
  ( sh "$host_dir/behaviour.sh" < /dev/null > "$inst/out" 2> "$inst/err"; echo $? > "$inst/exit.tmp"; mv "$inst/exit.tmp" "$inst/exit" ) < /dev/null > /dev/null 2>&1 &
  echo "${startedNotice} ($inst)"; exit 0 ;;
esac`;

/**
 * ForceCommand: `recorder.sh <host dir>`. One file per session, named so that a plain sort is
 * the order of arrival; written completely (tmp + mv) before the behaviour runs, so the record
 * exists by the time a client sees the exit status.
 */
const recorderScript = `#!/bin/sh
host_dir=$1
${detachedInstallEmulation}
record="$host_dir/commands/$(date +%s%N).$$"
printf '%s' "$SSH_ORIGINAL_COMMAND" > "$record.tmp" && mv "$record.tmp" "$record.cmd"
. "$host_dir/behaviour.sh"
`;

function behaviourScript(behaviour: SshHostBehaviour): string {
  switch (behaviour.kind) {
    case 'succeed':
      return "printf 'Reading package lists...\\nSetting up packages (recorded, not installed)\\n'\nexit 0\n";
    case 'fail':
      return `printf '%s\\n' ${shellQuote(behaviour.stderr)} >&2\nexit ${Math.trunc(behaviour.exitCode)}\n`;
    case 'hang':
      // The pid file lets stopAll end sessions whose client has long gone.
      return `echo $$ > "$host_dir/pids/$$"\nexec sleep ${Math.trunc(behaviour.seconds)}\n`;
    case 'slow':
      return `sleep ${behaviour.seconds}\nexit 0\n`;
    case 'shell':
      return 'exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"\n';
    case 'lab':
      return [
        'case $SSH_ORIGINAL_COMMAND in',
        '  *apt-get*)',
        // SSH_CONNECTION: client address, client port, server address, server port.
        '    set -- $SSH_CONNECTION',
        `    printf '[bpa demo lab host %s: apt-get recorded, NOT run; nothing is installed]\\n' "$3"`,
        "    printf 'Reading package lists... Done\\nSetting up packages (recorded, not installed)\\n'",
        '    exit 0 ;;',
        'esac',
        'exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"',
        '',
      ].join('\n');
  }
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
  await run('ssh-keygen', [
    '-q',
    '-t',
    'ed25519',
    '-N',
    '',
    '-C',
    `bpa-test-host-${state.index}`,
    '-f',
    keyPath,
  ]);
  const { stdout } = await run('ssh-keygen', ['-l', '-E', 'sha256', '-f', keyPath + '.pub']);
  const fingerprint = stdout.split(' ')[1];
  if (!fingerprint?.startsWith('SHA256:')) throw new Error(`unexpected ssh-keygen -l output: ${stdout}`);
  state.host.hostKeyFingerprint = fingerprint;
  const [type, blob] = (await readFile(keyPath + '.pub', 'utf8')).trim().split(' ');
  state.host.knownHostsLine = `${knownHostsName(state.host.ip, state.host.port)} ${type} ${blob}`;
}

function sshdConfig(state: HostState, root: string, port: number, username: string): string {
  return [
    `ListenAddress ${state.host.ip}`,
    `Port ${port}`,
    `HostKey ${join(state.dir, 'host_ed25519_key')}`,
    `PidFile ${join(state.dir, 'sshd.pid')}`,
    `AuthorizedKeysFile ${join(root, 'authorized_keys')}`,
    `AllowUsers ${username}`,
    'AuthenticationMethods publickey',
    'PubkeyAuthentication yes',
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
    'AllowAgentForwarding no',
    // The fan-out benchmark and load tests open many sessions at once.
    'MaxStartups 200',
    'MaxSessions 50',
    'LogLevel VERBOSE',
    `ForceCommand ${join(root, 'recorder.sh')} ${state.dir}`,
    '',
  ].join('\n');
}

/** Starts the host's sshd and waits until it greets; false when it could not bind or start. */
async function startSshd(state: HostState, root: string, port: number, username: string): Promise<boolean> {
  state.host.port = port;
  state.host.knownHostsLine = state.host.knownHostsLine.replace(
    /^\S+ /,
    `${knownHostsName(state.host.ip, port)} `,
  );
  const configPath = join(state.dir, 'sshd_config');
  await writeFile(configPath, sshdConfig(state, root, port, username));
  const log = openSync(join(state.dir, 'sshd.log'), 'a');
  const sshd = [sshdPath, '-D', '-e', '-f', configPath];
  // `ip netns exec` enters the namespace and execs sshd: the child's pid is sshd's.
  const [command, ...args] = state.netns ? ['ip', 'netns', 'exec', state.netns, ...sshd] : sshd;
  const child = spawn(command!, args, { stdio: ['ignore', log, log] });
  closeSync(log);
  state.process = child;
  const exited = once(child, 'exit').then(() => false);
  const deadline = Date.now() + 15000;
  const greeted = (async () => {
    while (Date.now() < deadline && child.exitCode === null && child.signalCode === null) {
      if (await sshBanner(state.host.ip, port)) return true;
      await new Promise((r) => setTimeout(r, 50));
    }
    return false;
  })();
  const ok = await Promise.race([exited, greeted]);
  if (!ok) await stopSshd(state);
  return ok;
}

async function stopSshd(state: HostState): Promise<void> {
  const child = state.process;
  state.process = undefined;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
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

/** The host name OpenSSH writes in known_hosts: `ip` on port 22, `[ip]:port` otherwise. */
const knownHostsName = (ip: string, port: number) => (port === 22 ? ip : `[${ip}]:${port}`);

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
