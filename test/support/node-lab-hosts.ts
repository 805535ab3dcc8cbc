/**
 * Real OpenSSH hosts (local/lab/openssh-hosts.ts) that the run's node's pods reach: each in a
 * network namespace of its own on the node's lab bridge (local/lab/lab-network.ts), as the lab's
 * machines are. The install Job's pod (contract section 11) runs on the node, so a host it must
 * reach cannot listen on this machine's loopback. This machine reaches them too (it routes the
 * lab's /24 through the node), so a test reads their records as before.
 *
 * Several test files share the run's node: each host's address (an octet of the lab's /24) is
 * claimed by creating a file exclusively, so two files never take the same one.
 */
import { mkdir, open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createLabNetwork, type NodeNetworkAttachment } from '../../local/lab/lab-network.js';
import { startSshHosts, type SshHosts, type StartSshHostsOptions } from '../../local/lab/openssh-hosts.js';
import { testEnv } from './control-plane-env.js';

/** The run's node's lab attachment (set by the global setup), or undefined without a node. */
export function nodeLabAttachment(): NodeNetworkAttachment | undefined {
  const json = process.env[testEnv.nodeLab];
  return json ? (JSON.parse(json) as NodeNetworkAttachment) : undefined;
}

/**
 * Claims `count` free octets of the lab's /24, from 250 down: the top ones are the demo lab's
 * (local/lab/lab.ts labHostOctets), should a suite start it on the run's node.
 */
async function claimOctets(attachment: NodeNetworkAttachment, count: number): Promise<number[]> {
  const root = process.env[testEnv.nodeHostPaths];
  if (!root) throw new Error(`${testEnv.nodeHostPaths} is not set: the run has no node`);
  const dir = join(root, '.lab-octets');
  await mkdir(dir, { recursive: true });
  const claimed: number[] = [];
  for (let octet = 250; octet >= attachment.firstHostOctet && claimed.length < count; octet--) {
    try {
      await (await open(join(dir, String(octet)), 'wx')).close();
      claimed.push(octet);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  if (claimed.length < count) {
    await releaseOctets(dir, claimed);
    throw new Error(`the run's node lab has fewer than ${count} free addresses`);
  }
  return claimed;
}

async function releaseOctets(dir: string, octets: readonly number[]): Promise<void> {
  for (const octet of octets) await rm(join(dir, String(octet)), { force: true });
}

export interface NodeSshHosts extends SshHosts {
  /** The network namespace of the lab host with this address (to run something else there). */
  netnsOf(ip: string): string;
}

/**
 * startSshHosts on the run's node's lab (its options, less the addresses, which are claimed
 * here). stopAll stops the hosts, removes their namespaces and frees their addresses.
 */
export async function startNodeSshHosts(
  options: Omit<StartSshHostsOptions, 'addresses' | 'netns' | 'firstAddress'>,
): Promise<NodeSshHosts> {
  const attachment = nodeLabAttachment();
  if (!attachment) throw new Error(`startNodeSshHosts: the run has no node (${testEnv.nodeLab} is not set)`);
  const octets = await claimOctets(attachment, options.count);
  const dir = join(process.env[testEnv.nodeHostPaths] ?? '', '.lab-octets');
  try {
    const network = await createLabNetwork(attachment, octets);
    try {
      const hosts = await startSshHosts({
        // Each host has a network namespace, so a port space, of its own: 22 is free in each,
        // and this machine cannot bind their addresses to look for another.
        port: 22,
        ...options,
        addresses: network.hosts.map((host) => host.ip),
        netns: network.hosts.map((host) => host.netns),
      });
      const stopAll = hosts.stopAll.bind(hosts);
      return Object.assign(hosts, {
        netnsOf: (ip: string) => {
          const found = network.hosts.find((host) => host.ip === ip);
          if (!found) throw new Error(`no lab host ${ip}`);
          return found.netns;
        },
        stopAll: async () => {
          await stopAll();
          await network.remove();
          await releaseOctets(dir, octets);
        },
      });
    } catch (error) {
      await network.remove();
      throw error;
    }
  } catch (error) {
    await releaseOctets(dir, octets);
    throw error;
  }
}
