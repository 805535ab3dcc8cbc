import type { CloudEvent } from 'cloudevents';
import type { Logger } from '../../shared/log.js';
import { Reason } from '../../shared/reasons.js';
import type { Software } from '../../shared/schemas/software.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import type { FunctionContext } from '../../shared/server/types.js';
import type { ClusterNode } from './cluster-nodes.js';
import type { SoftwareInstallConfig } from './config.js';
import { hostInstalls, sshCommandDuration, sshConnectDuration } from './metrics.js';
import { hostStatus } from './install-job/run.js';
import { softwareLists } from './package-checks.js';
import { completeSoftware, failSoftware, type HostStatus } from './software-status.js';
import { packageWord } from './ssh/command.js';
import {
  packagesForRoles,
  runInstall,
  type HostInstallResult,
  type HostKeyVerification,
  type PlannedHostInstall,
} from './ssh/install.js';

/**
 * The in-request runner (INSTALL_RUNNER=in-request): the SSH work inside software-install's
 * request, for the suites and the no-root lab whose SSH hosts no Job's pod can reach. Contract
 * section 11 says installs run in Jobs; this runner goes once those move to the Job runner
 * (issue 26). Everything here is used by this runner only.
 */

export type InRequestOutcome =
  { kind: 'installed' | 'failed'; event?: CloudEvent<unknown> } | { kind: 'skipped' };

export async function installInRequest(
  context: FunctionContext<SoftwareInstallConfig>,
  clients: KubeClients,
  claimed: StoredObject,
  run: {
    software: Software;
    cluster: string;
    nodes: ClusterNode[];
    plans: PlannedHostInstall[];
    privateKey: Buffer;
    hostKeys: HostKeyVerification;
    log: Logger;
  },
): Promise<InRequestOutcome> {
  const { log, nodes, hostKeys } = run;
  log.info('installing', { cluster: run.cluster, hosts: run.plans.length });
  const results = await runInstall({
    hosts: run.plans,
    port: context.config.SSH_PORT,
    username: context.config.SSH_USER,
    privateKey: run.privateKey,
    hostKeys,
    connectTimeoutMs: context.config.SSH_CONNECT_TIMEOUT_SECONDS * 1000,
    commandTimeoutMs: context.config.SSH_TIMEOUT_SECONDS * 1000,
    concurrency: context.config.SSH_CONCURRENCY,
    logger: log,
  });
  const fingerprints = hostKeys.mode === 'trust-on-first-use' ? (hostKeys.fingerprints ?? {}) : {};
  const byNode = new Map(nodes.map((node) => [node.label + '\u0000' + node.ip, node]));
  const hosts = results.map((result) => {
    recordHostMetrics(context, result);
    const node = byNode.get(result.node + '\u0000' + result.ip);
    const packages = packagesForRoles(node?.roles ?? [], softwareLists(run.software));
    const words = [...new Set(packages.map(packageWord))];
    return hostStatus(result, node?.roles ?? [], words, fingerprints[result.ip]);
  });
  return finish(context, clients, claimed, run.cluster, nodes, hosts);
}

function recordHostMetrics(context: FunctionContext<SoftwareInstallConfig>, result: HostInstallResult) {
  const outcome = result.error ? 'failed' : 'succeeded';
  context.metrics?.counter(hostInstalls).inc({ outcome });
  const seconds = result.durationMs / 1000;
  const connectMs = result.connectDurationMs;
  if (connectMs !== undefined)
    context.metrics?.histogram(sshConnectDuration).observe({ outcome: 'connected' }, connectMs / 1000);
  else if (result.error && /^(Connect|Authentication|HostKey)/.test(result.error.reason))
    context.metrics?.histogram(sshConnectDuration).observe({ outcome: 'failed' }, seconds);
  if (result.exitCode !== null || result.error?.reason === 'CommandTimeout')
    context.metrics?.histogram(sshCommandDuration).observe({ outcome }, seconds);
}

async function finish(
  context: FunctionContext<SoftwareInstallConfig>,
  clients: KubeClients,
  claimed: StoredObject,
  cluster: string,
  nodes: ClusterNode[],
  hosts: HostStatus[],
): Promise<InRequestOutcome> {
  const failed = hosts.filter((host) => host.error !== undefined);
  if (failed.length > 0) {
    const details = failed.map((h) => `${h.node} (${h.ip}): ${(h.error ?? '').split('\n')[0]}`).join('; ');
    const message = `Installation failed on ${failed.length} of ${hosts.length} hosts: ${details}`.slice(
      0,
      4000,
    );
    const event = await failSoftware(
      clients,
      claimed,
      { reason: Reason.InstallFailed, message },
      context.log,
      hosts,
    );
    return { kind: 'failed', event };
  }
  const message =
    hosts.length === 0
      ? `Nothing to install on the ${nodes.length} nodes of cluster ${cluster}`
      : `Installed on ${hosts.length} host${hosts.length === 1 ? '' : 's'} of cluster ${cluster}`;
  const installedNodes = nodes.map((node) => ({ node: node.label, ip: node.ip }));
  const event = await completeSoftware(clients, claimed, message, hosts, context.log, { installedNodes });
  return event ? { kind: 'installed', event } : { kind: 'skipped' };
}
