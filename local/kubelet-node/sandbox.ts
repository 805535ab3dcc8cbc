/**
 * The node's own namespaces and cgroups. A holder process (`unshare --net --mount`, then sleep)
 * owns a network namespace and a private mount namespace; containerd, the kubelet, kube-proxy and
 * ctr enter both with nsenter. Inside, tmpfs covers /run, /var/lib and /var/log (the kubelet writes
 * /var/lib/kubelet/device-plugins and /var/log/containers, libcni caches in /var/lib/cni, ctr finds
 * containerd's FIFOs under /run/containerd), so two nodes never share a path and everything they
 * wrote vanishes with the namespace. Except containerd's root, /var/lib/containerd: the images'
 * content and unpacked snapshots (gigabytes for the project's images) would live in memory on a
 * tmpfs, about 4 GB a node, and a test run has several nodes at once; it is <work>/containerd on
 * the machine's disk (bind-mounted), removed with the work directory. The node's /opt is <work>/host/opt of the machine (a bind
 * mount): hostPath volumes there (the KUD Job's /opt/kud/multi-cluster, made here as on a KUD
 * host, since a hostPath of no type must exist) never touch the machine's /opt, and a process
 * outside the node reads and writes them at that path. Files holding the values the kubelet expects are bind-mounted
 * over the /proc/sys entries it checks (protectKernelDefaults): the machine's settings stay as they are.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from '../control-plane/wait.js';
import { pinMountNamespace, type NamespacePin } from './cleanup.js';

/** What kubelet's setupKernelTunables wants; with protectKernelDefaults it only checks them. */
const kernelDefaults: Record<string, string> = {
  'vm/overcommit_memory': '1',
  'vm/panic_on_oom': '0',
  'kernel/panic': '10',
  'kernel/panic_on_oops': '1',
  'kernel/keys/root_maxkeys': '1000000',
  'kernel/keys/root_maxbytes': '25000000',
};

const holderScript = `set -e
work=$1; shift
for dir in /run /var/lib /var/log; do mount -t tmpfs -o mode=755 bpa-node "$dir"; done
mkdir -p "$work/containerd" /var/lib/containerd
mount --bind "$work/containerd" /var/lib/containerd
mkdir -p "$work/host/opt/kud/multi-cluster"
mount --bind "$work/host/opt" /opt
mkdir -p "$work/sysctl"
for kv in "$@"; do
  key=\${kv%%=*}; file="$work/sysctl/$(echo "$key" | tr / .)"
  echo "\${kv#*=}" >"$file"
  mount --bind "$file" "/proc/sys/$key"
done
echo ready >"$work/holder.ready"
exec sleep infinity`;

export interface NodeSandbox {
  /** The holder's PID: `nsenter --target <pid> --net --mount` enters the node. */
  pid: number;
  /**
   * The node's mount namespace, held open (cleanup.ts says why): every process of the node (shims
   * too) shows its name, `mnt:[<inode>]`, in /proc/<pid>/ns/mnt.
   */
  mountNamespace: NamespacePin;
}

/** Starts the holder and waits until its mounts are in place. */
export async function startSandbox(workDir: string): Promise<NodeSandbox> {
  const args = Object.entries(kernelDefaults).map(([key, value]) => `${key}=${value}`);
  const holder = spawn(
    'unshare',
    [
      '--net',
      '--mount',
      '--propagation',
      'private',
      '--',
      'sh',
      '-c',
      holderScript,
      'holder',
      workDir,
      ...args,
    ],
    { stdio: 'ignore', detached: true },
  );
  holder.unref();
  const pid = holder.pid;
  if (!pid) throw new Error('unshare did not start');
  const ready = join(workDir, 'holder.ready');
  await waitFor(async () => (existsSync(ready) ? true : undefined), {
    what: 'the node namespace holder',
    timeoutMs: 10_000,
    intervalMs: 20,
    abortIf: () => (holder.exitCode !== null ? `unshare exited with ${holder.exitCode}` : undefined),
  });
  return { pid, mountNamespace: pinMountNamespace(pid) };
}

/** The cgroup v1 hierarchies (plus the unified one of a hybrid mount) under /sys/fs/cgroup. */
export function cgroupHierarchies(): string[] {
  const base = '/sys/fs/cgroup';
  return readdirSync(base)
    .map((name) => join(base, name))
    .filter((dir) => statSync(dir).isDirectory() && existsSync(join(dir, 'cgroup.procs')));
}

/**
 * Creates the node's cgroupRoot in every hierarchy (the kubelet expects it to exist); cpuset needs
 * its cpus and mems filled in before any task may join it.
 */
export function createCgroupRoot(name: string): void {
  for (const hierarchy of cgroupHierarchies()) {
    const dir = join(hierarchy, name);
    mkdirSync(dir, { recursive: true });
    if (existsSync(join(hierarchy, 'cpuset.cpus'))) {
      for (const file of ['cpuset.cpus', 'cpuset.mems']) {
        if (readFileSync(join(dir, file), 'utf8').trim() === '') {
          writeFileSync(join(dir, file), readFileSync(join(hierarchy, file), 'utf8'));
        }
      }
    }
  }
}
