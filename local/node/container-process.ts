import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * How one container runs: as a local process in the pod's network namespace, in a mount
 * namespace of its own (`ip netns exec` makes one, and bind-mounts the namespace's resolv.conf and
 * hosts over /etc's), with its volumes bind-mounted at their mount paths, its own hostname (a UTS
 * namespace) and exactly the container's environment. It leads its own process group, so that a
 * signal reaches whatever it started.
 */
export interface ContainerMount {
  source: string;
  target: string;
  readOnly: boolean;
}

export interface ContainerLaunch {
  netns: string;
  hostname: string;
  mounts: ContainerMount[];
  workingDir: string;
  /** The full argv: command, then args. */
  argv: string[];
  env: Record<string, string>;
}

export interface ContainerExit {
  exitCode: number;
  signal?: NodeJS.Signals;
}

export interface RunningProcess {
  pid: number;
  exited: Promise<ContainerExit>;
  /** Signals the whole process group. */
  signal(signal: NodeJS.Signals): void;
}

const defaultPath = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/**
 * The shell script that sets up the mount namespace, then execs the container's command (passed
 * as its arguments, so they are never parsed by a shell). Missing mount targets are created on the
 * machine's file system (empty directories or files; what is mounted on them stays private).
 */
export function launcherScript(launch: Pick<ContainerLaunch, 'hostname' | 'mounts' | 'workingDir'>): string {
  const lines = ['set -e', `printf %s ${quote(launch.hostname)} > /proc/sys/kernel/hostname`];
  for (const mount of launch.mounts) {
    const source = quote(mount.source);
    const target = quote(mount.target);
    lines.push(
      `if [ -d ${source} ]; then mkdir -p ${target}; else mkdir -p "$(dirname ${target})"; [ -e ${target} ] || : > ${target}; fi`,
      `/usr/bin/mount --bind ${source} ${target}`,
    );
    if (mount.readOnly) lines.push(`/usr/bin/mount -o remount,bind,ro ${target}`);
  }
  lines.push(`cd ${quote(launch.workingDir)}`, 'exec "$@"');
  return lines.join('\n') + '\n';
}

const signalNumbers: Partial<Record<NodeJS.Signals, number>> = {
  SIGKILL: 9,
  SIGTERM: 15,
  SIGINT: 2,
  SIGHUP: 1,
};

/** Starts a container process; its stdout and stderr go to `logPath`. */
export function startContainerProcess(
  launch: ContainerLaunch,
  scriptPath: string,
  logPath: string,
): RunningProcess {
  writeFileSync(scriptPath, launcherScript(launch), { mode: 0o700 });
  mkdirSync(dirname(logPath), { recursive: true });
  const logFd = openSync(logPath, 'a');
  const env = { PATH: defaultPath, HOSTNAME: launch.hostname, HOME: '/root', ...launch.env };
  const child = (() => {
    try {
      return spawn(
        '/usr/sbin/ip',
        ['netns', 'exec', launch.netns, '/usr/bin/unshare', '--uts', '/bin/sh', scriptPath, ...launch.argv],
        { stdio: ['ignore', logFd, logFd], env, detached: true },
      );
    } finally {
      closeSync(logFd);
    }
  })();
  const exited = new Promise<ContainerExit>((resolve) => {
    child.once('exit', (code, signal) => {
      if (signal) resolve({ exitCode: 128 + (signalNumbers[signal] ?? 0), signal });
      else resolve({ exitCode: code ?? 0 });
    });
    child.once('error', (error) => {
      writeFileSync(logPath, `${error.message}\n`, { flag: 'a' });
      resolve({ exitCode: 128 });
    });
  });
  const pid = child.pid ?? -1;
  return {
    pid,
    exited,
    signal: (signal) => {
      try {
        process.kill(-pid, signal);
      } catch {
        // the group is gone
      }
    },
  };
}

/** Whether a path exists as a file (for the log server). */
export const isFile = (path: string) => existsSync(path) && statSync(path).isFile();
