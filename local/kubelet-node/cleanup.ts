/**
 * Removes everything a node leaves: its processes (containerd, kubelet, kube-proxy and the runc
 * shims, which containerd's exit re-parents to PID 1, all found by the node's mount namespace;
 * container processes, in namespaces of their own, found by the node's cgroups), its cgroups
 * (depth-first: a parent is removable only once empty), the holder (so the namespaces, their tmpfs
 * and the veth go with it), the network namespaces of the lab hosts attached to it (named
 * `<hostif>-*`, network.ts labAttachmentOf; their sshd processes first) and its directory. One script, run on stop and by a watchdog that waits
 * for the launcher to die: a test killed hard leaves nothing either.
 *
 * A namespace is named by its inode number (`mnt:[N]`), and the kernel hands the lowest free
 * number out again at once: the moment the node's last process dies, the next `unshare` or
 * container anywhere on the machine (another test's node) gets `mnt:[N]`, and a clean-up that goes
 * on looking for `mnt:[N]` kills it. So whoever matches processes by that name holds the
 * namespace open (pinMountNamespace): the launcher from the holder's start to the end of its stop, the
 * watchdog (the pin is its fd 3) until it exits.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readlinkSync } from 'node:fs';

const script = `parent=$1; mntns=$2; cgname=$3; hostif=$4; work=$5
if [ "$parent" != now ]; then
  while kill -0 "$parent" 2>/dev/null; do sleep 1; done
fi
[ -d "$work" ] || exit 0
in_node() { for p in /proc/[0-9]*; do
  [ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$mntns" ] && echo "\${p#/proc/}"
done; }
in_cgroups() { for h in /sys/fs/cgroup/*/"$cgname"; do
  [ -d "$h" ] && find "$h" -name cgroup.procs -exec cat {} + 2>/dev/null
done; }
for round in 1 2 3 4 5 6 7 8 9 10; do
  pids="$(in_cgroups) $(in_node)"
  [ -z "$(echo $pids)" ] && break
  kill -KILL $pids 2>/dev/null
  sleep 0.2
done
for h in /sys/fs/cgroup/*/"$cgname"; do
  [ -d "$h" ] || continue
  for round in 1 2 3 4 5 6 7 8 9 10; do
    find "$h" -depth -type d -exec rmdir {} + 2>/dev/null
    [ -d "$h" ] || break
    sleep 0.2
  done
done
for ns in /run/netns/"$hostif"-*; do
  [ -e "$ns" ] || continue
  ino=$(stat -L -c %i "$ns")
  for p in /proc/[0-9]*; do
    [ "$(stat -L -c %i "$p/ns/net" 2>/dev/null)" = "$ino" ] && kill -KILL "\${p#/proc/}" 2>/dev/null
  done
  ip netns delete "\${ns##*/}" 2>/dev/null
done
ip link delete "$hostif" 2>/dev/null
rm -rf "$work"
exit 0`;

export interface CleanupTarget {
  mountNamespace: string;
  cgroupName: string;
  hostInterface: string;
  workDir: string;
}

const args = (parent: string, target: CleanupTarget) => [
  '-c',
  script,
  'bpa-node-cleanup',
  parent,
  target.mountNamespace,
  target.cgroupName,
  target.hostInterface,
  target.workDir,
];

/** Cleans up now (after the graceful stop of containerd, kubelet and kube-proxy), the caller holding the pin. */
export function cleanupNow(target: CleanupTarget): void {
  spawnSync('sh', args('now', target), { stdio: 'ignore', timeout: 60_000 });
}

/** A namespace held open: its name is no other namespace's while `fd` is open. */
export interface NamespacePin {
  fd: number;
  /** `mnt:[<inode>]`, as /proc/<pid>/ns/mnt reads. */
  name: string;
  close(): void;
}

/** Holds the mount namespace of `pid` open; with `expected`, fails unless it is that one. */
export function pinMountNamespace(pid: number, expected?: string): NamespacePin {
  const fd = openSync(`/proc/${pid}/ns/mnt`, 'r');
  const name = readlinkSync(`/proc/self/fd/${fd}`);
  let open = true;
  const close = () => {
    if (open) closeSync(fd);
    open = false;
  };
  if (expected !== undefined && name !== expected) {
    close();
    throw new Error(`process ${pid} is in ${name}, not ${expected}`);
  }
  return { fd, name, close };
}

/**
 * Cleans up once this process is gone, however it died. Kill it on a clean stop. It holds `pin`
 * (the node's mount namespace) as its fd 3 until it exits, so the name it looks for stays the node's.
 */
export function startCleanupWatchdog(target: CleanupTarget, pin: NamespacePin): ChildProcess {
  const watchdog = spawn('sh', args(String(process.pid), target), {
    stdio: ['ignore', 'ignore', 'ignore', pin.fd],
    detached: true,
  });
  watchdog.unref();
  return watchdog;
}

/**
 * What a node left on the machine (for tests and the sweep): empty when nothing. Its processes are
 * found by `target.mountNamespace`, which names the node's namespace only while someone holds
 * it (pinMountNamespace); unpinned, a later namespace of another node may bear the name.
 */
export function leftovers(target: CleanupTarget): string[] {
  const found = spawnSync(
    'sh',
    [
      '-c',
      `for p in /proc/[0-9]*; do [ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$1" ] && echo "process \${p#/proc/}"; done
for h in /sys/fs/cgroup/*/"$2"; do [ -d "$h" ] && echo "cgroup $h"; done
ip link show "$3" >/dev/null 2>&1 && echo "link $3"
for ns in /run/netns/"$3"-*; do [ -e "$ns" ] && echo "network namespace $ns"; done
[ -e "$4" ] && echo "directory $4"
exit 0`,
      'leftovers',
      target.mountNamespace,
      target.cgroupName,
      target.hostInterface,
      target.workDir,
    ],
    { encoding: 'utf8' },
  );
  return found.stdout.split('\n').filter(Boolean);
}
