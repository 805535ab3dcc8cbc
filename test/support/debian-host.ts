/**
 * Real Debian hosts for tests and benchmarks: each one is a real OpenSSH `sshd` on its own
 * 127.0.0.N whose sessions run, as root, inside their own copy of a real Debian root (built by
 * mmdebstrap, scripts/debian-root.sh, cached under ~/.cache/bpa-functions/). Nothing is recorded or
 * faked: `apt-get` and `dpkg` run for real, from the root's only apt source, a local `file:`
 * repository inside it (so nothing reaches the network).
 *
 * How: one private mount namespace per host (`unshare --mount`), in which an overlayfs (lower: the
 * cached root, upper: this host's own directory) is mounted with /proc, and sshd runs there with
 * `ChrootDirectory` set to it. The mounts live and die with that sshd; the cache is never written.
 *
 * Needs root, overlayfs, util-linux (unshare, nsenter), openssh-server, and the cache
 * (scripts/prereqs.sh builds it).
 */
import { execFile } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, readdir, readlink, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../../local/control-plane/repo-root.js';
import {
  generateSshKey,
  knownHostsName,
  launchSshd,
  newClientKey,
  sshdPath,
  startOnOnePort,
  stopChild,
  writeSshdConfig,
} from '../../local/lab/sshd-daemon.js';

const run = promisify(execFile);

/** The cached Debian root (built on first use, then reused): `<cache>/rootfs`. */
export async function debianRootCache(): Promise<string> {
  const { stdout } = await run('bash', [join(repoRoot(), 'scripts', 'debian-root.sh')], {
    maxBuffer: 16 * 1024 * 1024,
  });
  const cache = stdout.trim().split('\n').at(-1) ?? '';
  if (!existsSync(join(cache, 'ready')))
    throw new Error(`scripts/debian-root.sh printed no ready cache: ${stdout}`);
  return cache;
}

export interface DebianHost {
  /** 127.0.0.N, or the address it was given */
  ip: string;
  port: number;
  /** `[ip]:port ssh-ed25519 AAAA...` */
  knownHostsLine: string;
  /** Runs `sh -c script` as root inside this host's Debian root (not through SSH): for checks. */
  shell(script: string): Promise<{ stdout: string; stderr: string; code: number }>;
  /** Processes running inside this host (its mount namespace), with their command lines. */
  processes(): Promise<{ pid: number; command: string }[]>;
  /** The host's mount namespace (`mnt:[...]`), to tell its processes apart in one scan of /proc. */
  mountNamespace(): Promise<string | undefined>;
}

export interface DebianHosts {
  hosts: DebianHost[];
  port: number;
  username: 'root';
  privateKey: string;
  knownHosts(): string;
  stopAll(): Promise<void>;
}

interface HostState {
  host: DebianHost;
  dir: string;
  merged: string;
  process?: ChildProcess;
}

/** Where the per-host roots go: ChrootDirectory wants root-owned, non-writable path components (/tmp is not). */
const runDir = '/run/bpa-functions/debian-hosts';

export async function startDebianHosts(options: {
  count: number;
  firstAddress?: number;
  /**
   * The hosts' addresses, by position (default 127.0.0.N): loopback, or an address of a network
   * the test made in this namespace (the node's gateway, which its pods reach).
   */
  addresses?: readonly string[];
}): Promise<DebianHosts> {
  if (process.getuid?.() !== 0) throw new Error('startDebianHosts needs root (mounts, sshd)');
  const lower = join(await debianRootCache(), 'rootfs');
  await mkdir('/run/sshd', { recursive: true });
  await mkdir(runDir, { recursive: true, mode: 0o755 });
  const root = await mkdtemp(join(runDir, 'lab-'));
  await chmod(root, 0o755);
  const { privateKey } = await newClientKey(root);

  const first = options.firstAddress ?? 2;
  const states: HostState[] = [];
  for (let i = 0; i < options.count; i++) {
    const index = first + i;
    const dir = join(root, String(index));
    const merged = join(dir, 'merged');
    for (const sub of ['upper', 'work', 'merged'])
      await mkdir(join(dir, sub), { recursive: true, mode: 0o755 });
    const keyPath = join(dir, 'host_ed25519_key');
    await generateSshKey(keyPath, `bpa-debian-host-${index}`);
    const [type, blob] = (await readFile(keyPath + '.pub', 'utf8')).trim().split(' ');
    const state: HostState = {
      dir,
      merged,
      host: {
        ip: options.addresses?.[i] ?? `127.0.0.${index}`,
        port: 0,
        knownHostsLine: `${type} ${blob}`,
        shell: (script) => shellIn(state, script),
        processes: () => processesIn(state),
        mountNamespace: async () =>
          state.process?.pid === undefined
            ? undefined
            : readlink(`/proc/${state.process.pid}/ns/mnt`).catch(() => undefined),
      },
    };
    states.push(state);
  }

  const port = await startOnOnePort({
    states,
    start: (state, port) => startSshd(state, root, lower, port),
    stop: stopSshd,
    what: 'sshd in the Debian roots',
  });
  for (const state of states)
    state.host.knownHostsLine = `${knownHostsName(state.host.ip, port)} ${state.host.knownHostsLine.split(' ').slice(-2).join(' ')}`;

  return {
    hosts: states.map((s) => s.host),
    port,
    username: 'root',
    privateKey,
    knownHosts: () => states.map((s) => s.host.knownHostsLine).join('\n') + '\n',
    stopAll: async () => {
      await Promise.all(states.map(stopSshd));
      await rm(root, { recursive: true, force: true });
    },
  };
}

/** sshd in a new mount namespace where the host's overlay root and its /proc are mounted. */
async function startSshd(state: HostState, root: string, lower: string, port: number): Promise<boolean> {
  state.host.port = port;
  const configPath = await writeSshdConfig(state, {
    port,
    // Read before the chroot, from the host's file system.
    authorizedKeysFile: join(root, 'authorized_keys'),
    extra: [`ChrootDirectory ${state.merged}`, 'AllowUsers root'],
  });
  const { dir, merged } = state;
  const script = [
    'set -e',
    `mount -t overlay overlay -o lowerdir=${lower},upperdir=${dir}/upper,workdir=${dir}/work ${merged}`,
    `mount -t proc proc ${merged}/proc`,
    // dpkg's terminal log wants a pty (the root's own devpts instance, not the machine's).
    `mount -t devpts -o newinstance,ptmxmode=0666 devpts ${merged}/dev/pts`,
    `exec ${sshdPath} -D -e -f ${configPath}`,
  ].join('\n');
  return launchSshd(
    state,
    ['unshare', '--mount', '--propagation', 'private', '--', 'sh', '-c', script],
    port,
    stopSshd,
  );
}

async function stopSshd(state: HostState): Promise<void> {
  const child = state.process;
  state.process = undefined;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  // Sessions (apt, dpkg) left running in the namespace would keep its mounts alive.
  for (const { pid } of await processesIn(state)) if (pid !== child.pid) killQuietly(pid);
  await stopChild(child);
}

function killQuietly(pid: number, signal: NodeJS.Signals = 'SIGKILL'): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone.
  }
}

async function processesIn(state: HostState): Promise<{ pid: number; command: string }[]> {
  const sshdPid = state.process?.pid;
  if (sshdPid === undefined) return [];
  const namespace = await readlink(`/proc/${sshdPid}/ns/mnt`).catch(() => undefined);
  if (!namespace) return [];
  const found: { pid: number; command: string }[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    const ns = await readlink(`/proc/${pid}/ns/mnt`).catch(() => undefined);
    if (ns !== namespace) continue;
    const command = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    found.push({ pid, command: command.replace(/\0/g, ' ').trim() });
  }
  return found;
}

async function shellIn(
  state: HostState,
  script: string,
): Promise<{ stdout: string; stderr: string; code: number }> {
  const pid = state.process?.pid;
  if (pid === undefined) throw new Error(`Debian host ${state.host.ip} is not running`);
  return new Promise((resolveResult) => {
    execFile(
      'nsenter',
      ['--target', String(pid), '--mount', '--', 'chroot', state.merged, '/bin/sh', '-c', script],
      { maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolveResult({ stdout, stderr, code });
      },
    );
  });
}
