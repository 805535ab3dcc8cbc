/**
 * The node's addresses and its link to the machine. Each node takes a free index i (1-250): a veth
 * pair `bkn<i>` (the machine's end, 10.249.<i>.1/30) to `eth0` in the node's network namespace
 * (10.249.<i>.2, the node's InternalIP), and 10.248.<i>.0/24 for its pods. The kernel here has no
 * `dummy` device, hence a veth; the pair goes away with the namespace. No default route in the node:
 * nothing a pod sends can leave the machine. Machines of a lab (sshd hosts in network namespaces of
 * their own, local/lab/lab-network.ts) attach to the bridge `lab0` in the node's namespace, on
 * 10.247.<i>.0/24 (the node is .1): pods reach them through their default route (the node), the
 * machine through its route via the node, and they reach only those two (see labAttachmentOf).
 */
import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface NodeAddresses {
  index: number;
  /** The machine's end of the veth pair. */
  hostInterface: string;
  hostIp: string;
  /** The node's InternalIP, on eth0 inside its namespace. */
  nodeIp: string;
  /** The node's pod subnet (CNI bridge cni0, host-local IPAM). */
  podCidr: string;
  /** All nodes' pod subnets: kube-proxy's clusterCIDR. */
  clusterCidr: string;
  /** `10.247.<i>`: the /24 of the lab bridge in the node's namespace (the node is `.1`). */
  labSubnetPrefix: string;
}

/** Where machines of a lab attach to a node: labAttachmentOf. */
export interface LabAttachment {
  /**
   * A process in the node's network namespace (its holder): `nsenter --target <pid> --net`.
   * Absent: the bridge is in this process's own namespace.
   */
  nodePid?: number;
  /** The bridge in the node's namespace the lab hosts' veths join. */
  bridge: string;
  /** `10.247.<i>`: the lab's /24; `.1` is the node. */
  subnetPrefix: string;
  gateway: string;
  /** What a lab host routes through the gateway: the node's pods and the machine's end of its link. */
  returnRoutes: string[];
  /** Prefix of the lab hosts' network namespace names; the node's clean-up removes them all. */
  netnsPrefix: string;
  /** The node's index: tells veth names of several nodes apart. */
  index: number;
  /** The lowest octet a lab host may take (the real node: 2, above its own `.1`). */
  firstHostOctet: number;
}

/** The lab bridge in the node's namespace (one per node; the name is per namespace). */
export const labBridgeName = 'lab0';

/**
 * The API server's address for pods: on the machine's end of every node's veth, relayed to
 * kube-apiserver on 127.0.0.1. A control plane started with `advertiseAddress` set to it makes the
 * `kubernetes` Service (10.0.0.1:443) reachable from every node's pods through kube-proxy.
 */
export const kubeletNodeApiAddress = '10.249.0.1';

export const addressesOf = (index: number): NodeAddresses => ({
  index,
  hostInterface: `bkn${index}`,
  hostIp: `10.249.${index}.1`,
  nodeIp: `10.249.${index}.2`,
  podCidr: `10.248.${index}.0/24`,
  clusterCidr: '10.248.0.0/16',
  labSubnetPrefix: `10.247.${index}`,
});

/**
 * Claims a free index: none of 10.249.<i>.*, `bkn<i>` on the machine, and the node's work
 * directory `<tmp>/bpa-kubelet-node-<i>` created here (mkdir is the atomic claim: two launchers
 * racing never share an index; the clean-up removes the directory last, which frees it).
 */
export async function claimAddresses(tmp: string): Promise<{ addresses: NodeAddresses; workDir: string }> {
  const { stdout } = await run('ip', ['-o', 'addr', 'show']);
  const { stdout: links } = await run('ip', ['-o', 'link', 'show']);
  const taken = new Set<number>();
  for (const match of stdout.matchAll(/10\.249\.(\d+)\./g)) taken.add(Number(match[1]));
  for (const match of links.matchAll(/\bbkn(\d+)[@:]/g)) taken.add(Number(match[1]));
  const free = Array.from({ length: 250 }, (_, i) => i + 1).filter((i) => !taken.has(i));
  // Shuffled, so racing launchers seldom try the same index first.
  for (let i = free.length - 1; i > 0; i -= 1) {
    const j = Math.floor(Math.random() * (i + 1));
    [free[i], free[j]] = [free[j] ?? 0, free[i] ?? 0];
  }
  for (const index of free) {
    const workDir = join(tmp, `bpa-kubelet-node-${index}`);
    try {
      mkdirSync(workDir, { mode: 0o700 });
      return { addresses: addressesOf(index), workDir };
    } catch (error) {
      if ((error as { code?: string }).code !== 'EEXIST') throw error;
    }
  }
  throw new Error('no free node index (10.249.1-250.0/30 all in use)');
}

/**
 * Creates the veth pair into the namespace of `nsPid` and addresses both ends. The node gets a
 * route to the Service range through the machine's end, so the kubelet and kube-proxy (and a
 * process on the node) can reach ClusterIPs as a pod does.
 */
export async function linkNode(addresses: NodeAddresses, nsPid: number, serviceCidr: string): Promise<void> {
  const { hostInterface, hostIp, nodeIp } = addresses;
  await run('ip', [
    'link',
    'add',
    hostInterface,
    'type',
    'veth',
    'peer',
    'name',
    'eth0',
    'netns',
    String(nsPid),
  ]);
  await run('ip', ['addr', 'add', `${hostIp}/30`, 'dev', hostInterface]);
  await run('ip', ['addr', 'add', `${kubeletNodeApiAddress}/32`, 'dev', hostInterface]);
  await run('ip', ['link', 'set', hostInterface, 'up']);
  // Answers to pods (kube-apiserver's to a relayed pod, its webhook calls) go back through the node.
  await run('ip', ['route', 'add', addresses.podCidr, 'via', nodeIp, 'dev', hostInterface]);
  const inNode = (args: string[]) =>
    run('nsenter', ['--target', String(nsPid), '--net', '--', 'ip', ...args]);
  await inNode(['addr', 'add', `${nodeIp}/30`, 'dev', 'eth0']);
  await inNode(['link', 'set', 'eth0', 'up']);
  await inNode(['link', 'set', 'lo', 'up']);
  await inNode(['route', 'add', serviceCidr, 'via', hostIp]);
  await inNode(['route', 'add', `${kubeletNodeApiAddress}/32`, 'via', hostIp]);
  await linkLabBridge(addresses, nsPid);
}

/**
 * The lab bridge: `lab0` in the node's namespace with 10.247.<i>.1/24, forwarding on in that
 * namespace only (the CNI bridge plugin turns it on too, but only once a pod runs), and the
 * machine's route to it through the node. Why a bridge of its own rather than the pods' cni0: the
 * CNI plugin creates and addresses cni0 when the first pod starts and hands out its addresses, so
 * lab hosts there would race both; on lab0 the node routes between pods and lab hosts, and a lab
 * host's only routes lead back to the node's pods and the machine's end of the node's link.
 */
async function linkLabBridge(addresses: NodeAddresses, nsPid: number): Promise<void> {
  const inNode = (file: string, args: string[]) =>
    run('nsenter', ['--target', String(nsPid), '--net', '--', file, ...args]);
  await inNode('ip', ['link', 'add', labBridgeName, 'type', 'bridge']);
  await inNode('ip', ['addr', 'add', `${addresses.labSubnetPrefix}.1/24`, 'dev', labBridgeName]);
  await inNode('ip', ['link', 'set', labBridgeName, 'up']);
  // /proc/sys/net is the opener's network namespace: this is the node's setting, not the machine's.
  await inNode('sh', ['-c', 'echo 1 > /proc/sys/net/ipv4/ip_forward']);
  await run('ip', [
    'route',
    'add',
    `${addresses.labSubnetPrefix}.0/24`,
    'via',
    addresses.nodeIp,
    'dev',
    addresses.hostInterface,
    // The lab hosts route back to this address only (labAttachmentOf), not to 10.249.0.1.
    'src',
    addresses.hostIp,
  ]);
}

/**
 * Where a lab's machines attach to this node (local/lab/lab-network.ts): the node's namespace (by
 * its holder's PID), the lab bridge and /24, the routes a lab host gets back through the node, and
 * the prefix of the lab hosts' network namespace names (`bkn<i>-`: the node's clean-up removes
 * every namespace with it and kills what runs there, so a killed test leaves no lab behind either).
 */
export function labAttachmentOf(addresses: NodeAddresses, nodePid: number): LabAttachment {
  return {
    nodePid,
    bridge: labBridgeName,
    subnetPrefix: addresses.labSubnetPrefix,
    gateway: `${addresses.labSubnetPrefix}.1`,
    returnRoutes: [addresses.podCidr, `${addresses.hostIp}/32`],
    netnsPrefix: `${addresses.hostInterface}-`,
    index: addresses.index,
    firstHostOctet: 2,
  };
}

/**
 * A TCP relay from the machine's end of the veth to the API server on 127.0.0.1: kube-apiserver
 * binds loopback only, which the node's namespace cannot reach. TLS passes through untouched (the
 * node names the server `kubernetes`, which its serving certificate holds).
 */
export async function startApiRelay(
  listenIp: string,
  target: URL,
  listenPort = 0,
): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((inbound) => {
    const outbound = createConnection({ host: target.hostname, port: Number(target.port) });
    for (const socket of [inbound, outbound]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {
        inbound.destroy();
        outbound.destroy();
      });
    }
    inbound.pipe(outbound);
    outbound.pipe(inbound);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listenPort, listenIp, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * The one relay on kubeletNodeApiAddress:<kube-apiserver's port> for every node of this process
 * (the last node to stop closes it). A relay of another process on the same address and port
 * serves as well: EADDRINUSE is taken as that.
 */
const sharedRelays = new Map<string, { users: number; relay?: { close(): Promise<void> } }>();

export async function useAdvertisedRelay(target: URL): Promise<() => Promise<void>> {
  const key = target.port;
  const entry = sharedRelays.get(key) ?? { users: 0 };
  sharedRelays.set(key, entry);
  entry.users += 1;
  if (entry.users === 1) {
    try {
      entry.relay = await startApiRelay(kubeletNodeApiAddress, target, Number(target.port));
    } catch (error) {
      if ((error as { code?: string }).code !== 'EADDRINUSE') {
        entry.users -= 1;
        throw error;
      }
    }
  }
  return async () => {
    entry.users -= 1;
    if (entry.users === 0) {
      sharedRelays.delete(key);
      await entry.relay?.close();
    }
  };
}
