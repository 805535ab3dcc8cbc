import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { BpaError } from '../../shared/errors.js';
import type { LabAttachment } from '../kubelet-node/index.js';

const run = promisify(execFile);

/**
 * The part of a real node's network the lab's hosts join (local/kubelet-node/network.ts
 * labAttachmentOf): the bridge lab0 in the node's namespace, its /24, the routes back. REAL
 * Linux networking (veths, a bridge, routes, ip(8)); the hosts on it are real sshd daemons.
 */
export type NodeNetworkAttachment = LabAttachment;

export interface LabHostNamespace {
  ip: string;
  netns: string;
}

export interface LabNetwork {
  hosts: LabHostNamespace[];
  remove(): Promise<void>;
}

/**
 * The lab's machines on the node's network: one network namespace per host, joined to the lab
 * bridge in the node's namespace by a veth pair, with an address of the lab's /24 and routes only
 * to the node's pods and the machine's end of the node's link, both through the node. So the KUD
 * Job (hostNetwork: the node's namespace, on the bridge itself), every pod (its default route is
 * the node, which forwards) and this machine's root namespace (where the embedded functions run;
 * it routes the lab's /24 through the node) reach the hosts, and a host reaches nothing else: the
 * node has no default route, so nothing a host sends leaves the machine.
 */
export async function createLabNetwork(
  attachment: NodeNetworkAttachment,
  octets: readonly number[],
): Promise<LabNetwork> {
  const hosts: LabHostNamespace[] = [];
  const remove = async () => {
    // The veth pair goes with the namespace (its node end too).
    for (const host of hosts.splice(0)) await ip('netns', 'delete', host.netns).catch(() => undefined);
  };
  const first = attachment.firstHostOctet;
  const invalid = octets.filter((octet) => !Number.isInteger(octet) || octet < first || octet > 254);
  if (invalid.length > 0)
    throw new BpaError(
      'LabAddressOutOfRange',
      `lab host octets ${invalid.join(', ')} are not in ${first}-254 of ${attachment.subnetPrefix}.0/24 ` +
        `(below is the node's own, or its pods')`,
      'invalid',
    );
  const { nodePid } = attachment;
  const inNode = (...args: string[]) =>
    nodePid === undefined
      ? ip(...args)
      : exec('nsenter', ['--target', String(nodePid), '--net', '--', 'ip', ...args]);
  try {
    for (const octet of octets) {
      const netns = `${attachment.netnsPrefix}lab${octet}`;
      // Per node and host: a bridge in this machine's namespace (no nodePid) is shared by nodes.
      const veth = `l${attachment.index}h${octet}`;
      const address = `${attachment.subnetPrefix}.${octet}`;
      await ip('netns', 'delete', netns).catch(() => undefined);
      await ip('netns', 'add', netns);
      hosts.push({ ip: address, netns });
      // Made inside the node's namespace, its peer moved straight into the host's (named in
      // /run/netns, which nsenter --net alone still sees).
      await inNode('link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns);
      await inNode('link', 'set', veth, 'master', attachment.bridge, 'up');
      await ip('-n', netns, 'link', 'set', 'lo', 'up');
      await ip('-n', netns, 'addr', 'add', `${address}/24`, 'dev', 'eth0');
      await ip('-n', netns, 'link', 'set', 'eth0', 'up');
      for (const route of attachment.returnRoutes)
        await ip('-n', netns, 'route', 'add', route, 'via', attachment.gateway);
      // An address used before (an earlier lab host, gone) may still be in the node's neighbour
      // table with that host's MAC, for half a minute: the node would send the new host's
      // packets there, and the new host would drop them.
      await inNode('neigh', 'flush', 'to', address);
    }
    return { hosts: [...hosts], remove };
  } catch (error) {
    await remove();
    throw error;
  }
}

const ip = (...args: string[]) => exec('ip', args);

async function exec(file: string, args: string[]): Promise<void> {
  try {
    await run(file, args, { timeout: 30_000 });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new Error(`${file} ${args.join(' ')}: ${stderr || String(error)}`, { cause: error });
  }
}
