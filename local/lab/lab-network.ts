import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { BpaError } from '../../shared/errors.js';
import { lastPodOctet } from '../node/network.js';

const run = promisify(execFile);

/** The part of a node's network the lab's hosts join: its bridge and /24 (see local/node/network.ts). */
export interface NodeNetworkAttachment {
  /** The node's bridge in this machine's root namespace (it holds the gateway `<prefix>.1`). */
  bridge: string;
  /** `10.244.<slot>`: the node's /24, whose gateway, node namespace and pods all answer on it. */
  subnetPrefix: string;
  /**
   * Prefix of the node's network namespaces: the lab's share it, so a node's crash clean-up
   * (which deletes every namespace with the prefix and kills what runs in it) removes them too.
   */
  netnsPrefix: string;
  /** Distinguishes veth names between nodes on one machine. */
  slotIndex: number;
}

export interface LabHostNamespace {
  ip: string;
  netns: string;
}

export interface LabNetwork {
  hosts: LabHostNamespace[];
  remove(): Promise<void>;
}

/**
 * The lab's machines on the node's network: one network namespace per host, joined to the node's
 * bridge by a veth pair, with an address of the node's /24 and no route beyond it. So the KUD
 * Job (hostNetwork: the node's namespace), pods and this machine's root namespace (where the
 * functions run) reach the hosts, and the hosts reach nothing else. The octets are the top of the
 * /24, which the node leaves to machines on its network (its pods get .3 to .200:
 * local/node/network.ts).
 */
export async function createLabNetwork(
  attachment: NodeNetworkAttachment,
  octets: readonly number[],
): Promise<LabNetwork> {
  const hosts: LabHostNamespace[] = [];
  const remove = async () => {
    for (const host of hosts.splice(0)) await ip('netns', 'delete', host.netns).catch(() => undefined);
  };
  const taken = octets.filter((octet) => !Number.isInteger(octet) || octet <= lastPodOctet || octet > 254);
  if (taken.length > 0)
    throw new BpaError(
      'LabAddressInPodRange',
      `lab host octets ${taken.join(', ')} are not in ${lastPodOctet + 1}-254, the part of the node's /24 its pods never get`,
      'invalid',
    );
  try {
    for (const octet of octets) {
      const netns = `${attachment.netnsPrefix}lab${octet}`;
      const veth = `bpa${attachment.slotIndex}l${octet}`;
      const address = `${attachment.subnetPrefix}.${octet}`;
      await ip('netns', 'delete', netns).catch(() => undefined);
      await ip('netns', 'add', netns);
      hosts.push({ ip: address, netns });
      await ip('link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns);
      await ip('link', 'set', veth, 'master', attachment.bridge, 'up');
      await ip('-n', netns, 'link', 'set', 'lo', 'up');
      await ip('-n', netns, 'addr', 'add', `${address}/24`, 'dev', 'eth0');
      await ip('-n', netns, 'link', 'set', 'eth0', 'up');
    }
    return { hosts: [...hosts], remove };
  } catch (error) {
    await remove();
    throw error;
  }
}

async function ip(...args: string[]): Promise<void> {
  try {
    await run('ip', args, { timeout: 30_000 });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new Error(`ip ${args.join(' ')}: ${stderr || String(error)}`, { cause: error });
  }
}
