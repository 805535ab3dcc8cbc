import { existsSync } from 'node:fs';
import { BpaError } from '../../shared/errors.js';
import { dnsmasqBinary } from './cluster-dns.js';
import { runCommand } from './run-command.js';

/**
 * Whether this machine can run the node: root, iproute2, util-linux's unshare, dnsmasq and
 * network namespaces that can really be made. Throws one line (reason NodeUnavailable) saying
 * what is missing, so that callers can fall back to a control plane without a node.
 */
export async function checkNodePrerequisites(): Promise<void> {
  const fail = (why: string) =>
    new BpaError('NodeUnavailable', `the local node cannot run here: ${why}`, 'internal');
  if (process.getuid?.() !== 0) throw fail('it needs root (network and mount namespaces)');
  for (const [binary, pkg] of [
    ['/usr/sbin/ip', 'iproute2'],
    ['/usr/bin/unshare', 'util-linux'],
    ['/usr/bin/mount', 'mount'],
    [dnsmasqBinary, 'dnsmasq-base'],
  ] as const) {
    if (!existsSync(binary))
      throw fail(`${binary} is missing (Debian package ${pkg}; scripts/prereqs.sh installs it)`);
  }
  const probe = `bpa-preflight-${process.pid}`;
  try {
    await runCommand('ip', ['netns', 'add', probe]);
  } catch (error) {
    throw fail(`network namespaces are unavailable (${(error as Error).message.split('\n')[0]})`);
  } finally {
    await runCommand('ip', ['netns', 'delete', probe]).catch(() => undefined);
  }
}
