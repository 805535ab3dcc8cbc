import { spawn, type ChildProcess } from 'node:child_process';
import type { NodeSlot } from './slot.js';

/**
 * Cleans up a slot once this process is gone, even when it dies of SIGKILL and runs no exit
 * handler: a detached shell polls for it every second, then kills every process left in the
 * slot's network namespaces and deletes the namespaces, the bridge and the node's directories, unless the slot has been
 * claimed by another process meanwhile. Killed on a clean stop.
 */
const script = `parent=$1; prefix=$2; bridge=$3; claim=$4; shift 4
while kill -0 "$parent" 2>/dev/null; do sleep 1; done
[ "$(cat "$claim" 2>/dev/null)" = "$parent" ] || exit 0
for ns in $(ip netns list | cut -d' ' -f1 | grep "^$prefix"); do
  ip netns pids "$ns" | xargs -r kill -KILL 2>/dev/null
  ip netns delete "$ns" 2>/dev/null
  rm -rf "/etc/netns/$ns"
done
ip link delete "$bridge" 2>/dev/null
rm -f "$claim"
rm -rf "$@"
exit 0`;

/** `dirs`: the node's own directories, removed too. */
export function startCrashCleanup(slot: NodeSlot, dirs: string[]): ChildProcess | undefined {
  try {
    const watchdog = spawn(
      'sh',
      [
        '-c',
        script,
        'bpa-node-cleanup',
        String(process.pid),
        slot.netnsPrefix,
        slot.bridge,
        slot.claimFile,
        ...dirs,
      ],
      { detached: true, stdio: 'ignore' },
    );
    watchdog.on('error', () => undefined);
    watchdog.unref();
    return watchdog;
  } catch {
    return undefined;
  }
}
