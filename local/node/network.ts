import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BpaError } from '../../shared/errors.js';
import { runCommand } from './run-command.js';
import type { NodeSlot } from './slot.js';

/**
 * The node's networks: one Linux bridge in the machine's root namespace holding the gateway
 * address, and one network namespace per pod (plus one for the node itself, shared by hostNetwork
 * pods), each joined to the bridge by a veth pair. No namespace gets a default route, and the
 * root namespace does not forward (we never turn ip_forward on): a pod reaches its subnet, the
 * gateway's addresses (ClusterIPs, the DNS server) and nothing else.
 */
export interface PodSandbox {
  netns: string;
  ip: string;
  /** The root-side end of its veth pair (none for the node's own namespace when shared). */
  hostVeth?: string;
}

export const clusterDomain = 'cluster.local';

/**
 * Pods get .3 to .200 of the node's /24 (.1 the gateway, .2 the node); .201 to .254 are left to
 * machines on the node's network (the lab's hosts: local/lab/lab.ts labHostOctets, and the node
 * suites' hosts at .241 and up). Round robin over the whole /24 once handed a lab host's address to
 * a pod after about 248 pods on the run's node, so SSH to that host reached the pod.
 */
export const firstPodOctet = 3;
export const lastPodOctet = 200;

export class NodeNetwork {
  readonly gateway: string;
  readonly nodeIp: string;
  private readonly usedOctets = new Set<number>();
  private lastOctet = lastPodOctet;

  constructor(
    readonly slot: NodeSlot,
    /** The Service range routed to the gateway (where the node's proxies listen). */
    readonly serviceClusterIpRange: string,
  ) {
    this.gateway = `${slot.podSubnetPrefix}.1`;
    this.nodeIp = `${slot.podSubnetPrefix}.2`;
  }

  get podCidr(): string {
    return `${this.slot.podSubnetPrefix}.0/24`;
  }

  /** The bridge with its gateway address, and the node's own namespace. */
  async setUp(): Promise<void> {
    const { bridge } = this.slot;
    await ip('link', 'add', bridge, 'type', 'bridge');
    await ip('addr', 'add', `${this.gateway}/24`, 'dev', bridge);
    await ip('link', 'set', bridge, 'up');
    await this.joinNamespace(this.slot.nodeNetns, this.nodeIp, 2, 'bpa-node');
  }

  /** A fresh namespace with its own address for one pod. */
  async createPodSandbox(hostname: string, namespace: string): Promise<PodSandbox> {
    const octet = this.allocateOctet();
    const netns = `${this.slot.netnsPrefix}${octet}`;
    const ipAddress = `${this.slot.podSubnetPrefix}.${octet}`;
    try {
      await this.joinNamespace(netns, ipAddress, octet, hostname, namespace);
    } catch (error) {
      await this.deleteNamespace(netns);
      this.usedOctets.delete(octet);
      throw error;
    }
    return { netns, ip: ipAddress, hostVeth: this.hostVeth(octet) };
  }

  async deletePodSandbox(sandbox: PodSandbox): Promise<void> {
    // The veth first: deleting one end deletes both at once, while a namespace some process
    // still holds (or the kernel's deferred clean-up) would keep its veth, and its name, alive.
    if (sandbox.hostVeth) await ip('link', 'del', sandbox.hostVeth).catch(() => undefined);
    await this.deleteNamespace(sandbox.netns);
    const octet = Number(sandbox.ip.split('.').pop());
    this.usedOctets.delete(octet);
  }

  /** Adds a ClusterIP to the bridge, so that the node's proxy can listen on it. Idempotent. */
  async addServiceAddress(address: string): Promise<void> {
    await ip('addr', 'replace', `${address}/32`, 'dev', this.slot.bridge);
  }

  async removeServiceAddress(address: string): Promise<void> {
    await ip('addr', 'del', `${address}/32`, 'dev', this.slot.bridge).catch(() => undefined);
  }

  /** resolv.conf and hosts of a namespace, which `ip netns exec` bind-mounts over /etc's. */
  writeNamespaceFiles(netns: string, hostname: string, address: string, namespace?: string): void {
    const dir = join('/etc/netns', netns);
    mkdirSync(dir, { recursive: true });
    const searches = [
      ...(namespace ? [`${namespace}.svc.${clusterDomain}`] : []),
      `svc.${clusterDomain}`,
      clusterDomain,
    ];
    writeFileSync(
      join(dir, 'resolv.conf'),
      `nameserver ${this.gateway}\nsearch ${searches.join(' ')}\noptions ndots:5\n`,
    );
    writeFileSync(
      join(dir, 'hosts'),
      `127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n${address}\t${hostname}\n`,
    );
  }

  private hostVeth(octet: number): string {
    return `bpa${this.slot.index}h${octet}`;
  }

  /**
   * Round robin from the last one given: an address just freed is the last to come back, so a
   * new pod does not meet the previous holder's names while the kernel still tears them down.
   */
  private allocateOctet(): number {
    const count = lastPodOctet - firstPodOctet + 1;
    for (let step = 1; step <= count; step++) {
      const octet = firstPodOctet + ((this.lastOctet - firstPodOctet + step) % count);
      if (!this.usedOctets.has(octet)) {
        this.usedOctets.add(octet);
        this.lastOctet = octet;
        return octet;
      }
    }
    throw new BpaError('PodAddressesExhausted', `no free address left in ${this.podCidr}`, 'transient');
  }

  private async joinNamespace(
    netns: string,
    address: string,
    octet: number,
    hostname: string,
    namespace?: string,
  ): Promise<void> {
    const veth = this.hostVeth(octet);
    // Left by a pod whose clean-up did not finish (a crash, a namespace still held): this octet
    // is free by our books, so whatever holds its names belongs to no live pod. Without this,
    // every retry met "File exists" and the pod stayed ContainerCreating.
    await ip('link', 'del', veth).catch(() => undefined);
    if (octet !== 2) await ip('netns', 'delete', netns).catch(() => undefined);
    await ip('netns', 'add', netns);
    await ip('link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns);
    await ip('link', 'set', veth, 'master', this.slot.bridge, 'up');
    await ip('-n', netns, 'link', 'set', 'lo', 'up');
    await ip('-n', netns, 'addr', 'add', `${address}/24`, 'dev', 'eth0');
    await ip('-n', netns, 'link', 'set', 'eth0', 'up');
    // Services only, through the gateway; deliberately no default route.
    await ip('-n', netns, 'route', 'add', this.serviceClusterIpRange, 'via', this.gateway);
    this.writeNamespaceFiles(netns, hostname, address, namespace);
  }

  private async deleteNamespace(netns: string): Promise<void> {
    // Deleting the namespace deletes its veth end, and with it the root-side end.
    await ip('netns', 'delete', netns).catch(() => undefined);
    rmSync(join('/etc/netns', netns), { recursive: true, force: true });
  }
}

const ip = (...args: string[]) => runCommand('ip', args);
