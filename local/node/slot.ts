import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { BpaError } from '../../shared/errors.js';
import { runCommandSync } from './run-command.js';

/**
 * Several nodes may run on one machine at once (a test run's shared cluster, a test file's own,
 * a developer's `bpa cluster`). Each claims a slot: a number that makes its bridge, network
 * namespaces, pod subnet and Service range unique on the machine. The claim is a file holding the
 * owner's pid; a claim whose owner is dead is swept (its namespaces and bridge removed) and reused.
 */
export interface NodeSlot {
  index: number;
  /** 10.244.<index>.0/24: gateway .1 on the bridge, the node's namespace .2, pods .3-.254. */
  podSubnetPrefix: string;
  /** 10.0.<index>.0/24: what the control plane is given as --service-cluster-ip-range. */
  serviceClusterIpRange: string;
  bridge: string;
  /** Prefix of every network namespace of this slot. */
  netnsPrefix: string;
  /** The node's own network namespace (hostNetwork pods). */
  nodeNetns: string;
  claimFile: string;
}

export const slotDir = '/run/bpa-node';
const maxSlots = 64;

export function slotLayout(index: number): NodeSlot {
  return {
    index,
    podSubnetPrefix: `10.244.${index}`,
    serviceClusterIpRange: `10.0.${index}.0/24`,
    bridge: `bpa${index}br0`,
    netnsPrefix: `bpa${index}-`,
    nodeNetns: `bpa${index}-node`,
    claimFile: join(slotDir, `slot-${index}`),
  };
}

const ownerAlive = (claimFile: string): boolean => {
  try {
    const pid = Number(readFileSync(claimFile, 'utf8').trim());
    if (!Number.isInteger(pid) || pid <= 0) return false;
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Removes every process, network namespace and the bridge of a slot (synchronous, never throws). */
export function sweepSlot(slot: NodeSlot): void {
  const namespaces = runCommandSync('ip', ['netns', 'list'])
    .split('\n')
    .map((line) => line.split(' ')[0] ?? '')
    .filter((name) => name.startsWith(slot.netnsPrefix));
  for (const netns of namespaces) {
    for (const pid of runCommandSync('ip', ['netns', 'pids', netns]).split('\n').filter(Boolean)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // already gone
      }
    }
    runCommandSync('ip', ['netns', 'delete', netns]);
    rmSync(join('/etc/netns', netns), { recursive: true, force: true });
  }
  runCommandSync('ip', ['link', 'delete', slot.bridge]);
}

/** Claims the first free slot for this process. */
export function claimSlot(preferred?: number): NodeSlot {
  mkdirSync(slotDir, { recursive: true });
  const order = [
    ...(preferred === undefined ? [] : [preferred]),
    ...Array.from({ length: maxSlots }, (_, i) => i),
  ];
  for (const index of order) {
    const slot = slotLayout(index);
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const fd = openSync(slot.claimFile, 'wx', 0o644);
        writeSync(fd, `${process.pid}\n`);
        closeSync(fd);
        // A previous owner killed hard may have left namespaces behind: start clean.
        sweepSlot(slot);
        return slot;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        if (ownerAlive(slot.claimFile)) break;
        sweepSlot(slot);
        rmSync(slot.claimFile, { force: true });
      }
    }
  }
  throw new BpaError('NodeSlotsExhausted', `all ${maxSlots} node slots in ${slotDir} are taken`, 'internal');
}

export function releaseSlot(slot: NodeSlot): void {
  sweepSlot(slot);
  rmSync(slot.claimFile, { force: true });
}
