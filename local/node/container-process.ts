import { spawn } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';

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
 * The shell script that sets up the container's file system, then execs its command (passed as
 * its arguments, so they are never parsed by a shell). The container's root is an overlay whose
 * lower layer is the machine's root and whose upper layer is a directory of this run (on tmpfs):
 * the container sees the machine's files (the image map's commands are local programs), but what
 * it writes outside its volumes, and the mount targets made for them, stay in the upper layer and
 * never reach the machine. Every other mount (/proc, /dev, /sys, the namespace's resolv.conf and
 * hosts...) is bound into the new root as is. Then it chroots into it.
 * Caveat: overlayfs does not follow changes of its lower layer; a path the container looked up and
 * that the machine then replaces (rename, a directory by a file) keeps its old entry in the
 * container. Under a mount point of the machine (bound as is) lookups are live (docs/knative.md).
 */
export function launcherScript(
  launch: Pick<ContainerLaunch, 'hostname' | 'mounts' | 'workingDir'>,
  layers: ContainerLayers,
): string {
  const lines = [
    'set -e',
    `printf %s ${quote(launch.hostname)} > /proc/sys/kernel/hostname`,
    `root=${quote(layers.root)}`,
    `/usr/bin/mount -t overlay overlay -o ${quote(`lowerdir=/,upperdir=${layers.upper},workdir=${layers.work}`)} "$root"`,
    // Each mount point once, outermost first (a recursive bind brings what is below it).
    'bound=',
    `for m in $(cut -d' ' -f5 /proc/self/mountinfo | sort -u); do`,
    // /run is the container's own (as in any container): a fresh tmpfs, not the machine's.
    '  case "$m" in /|"$root"|"$root"/*|/run|/run/*) continue ;; esac',
    '  skip=; for b in $bound; do case "$m" in "$b"/*) skip=1 ;; esac; done',
    '  [ -z "$skip" ] && [ -e "$root$m" ] || continue',
    '  /usr/bin/mount --rbind "$m" "$root$m"',
    '  bound="$bound $m"',
    'done',
    '/usr/bin/mount -t tmpfs -o mode=755 tmpfs "$root/run"',
  ];
  for (const mount of launch.mounts) {
    const source = quote(mount.source);
    const target = `"$root"${quote(resolveOnMachine(mount.target))}`;
    lines.push(
      `if [ -d ${source} ]; then mkdir -p ${target}; else mkdir -p "$(dirname ${target})"; [ -e ${target} ] || : > ${target}; fi`,
      `/usr/bin/mount --bind ${source} ${target}`,
    );
    if (mount.readOnly) lines.push(`/usr/bin/mount -o remount,bind,ro ${target}`);
  }
  lines.push(
    `exec /usr/sbin/chroot "$root" /bin/sh -c 'cd "$0" && exec "$@"' ${quote(launch.workingDir)} "$@"`,
  );
  return lines.join('\n') + '\n';
}

/**
 * A mount target with the symbolic links of its existing part resolved on the machine (the
 * overlay's lower layer): /var/run/secrets/... is /run/secrets/... . Unresolved, `mkdir -p` and
 * `mount` under the new root would follow an absolute link out of it.
 */
export function resolveOnMachine(target: string): string {
  const rest: string[] = [];
  let existing = target;
  while (existing !== '/' && !existsSync(existing)) {
    rest.unshift(basename(existing));
    existing = dirname(existing);
  }
  return join(realpathSync(existing), ...rest);
}

/** The directories of one run's overlay root: its mount point, upper layer and overlay work dir. */
export interface ContainerLayers {
  root: string;
  upper: string;
  work: string;
}

const signalNumbers: Partial<Record<NodeJS.Signals, number>> = {
  SIGKILL: 9,
  SIGTERM: 15,
  SIGINT: 2,
  SIGHUP: 1,
};

/**
 * Starts a container process; its stdout and stderr go to `logPath`. `runDir` (on tmpfs: an
 * overlay's upper layer cannot live on the file system it covers) holds the run's layers and
 * launcher, and is removed when the process exits.
 */
export function startContainerProcess(
  launch: ContainerLaunch,
  runDir: string,
  logPath: string,
): RunningProcess {
  const layers = { root: join(runDir, 'root'), upper: join(runDir, 'upper'), work: join(runDir, 'work') };
  for (const dir of Object.values(layers)) mkdirSync(dir, { recursive: true });
  const scriptPath = join(runDir, 'launch.sh');
  writeFileSync(scriptPath, launcherScript(launch, layers), { mode: 0o700 });
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
      // The run's mount namespace died with it: its writable layer goes too.
      rmSync(runDir, { recursive: true, force: true });
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
      // No pid (the spawn failed): -(-1) would be PID 1.
      if (pid <= 0) return;
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
