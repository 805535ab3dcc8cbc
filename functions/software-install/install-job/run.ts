import type { KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import { BpaError, transient } from '../../../shared/errors.js';
import type { Logger } from '../../../shared/log.js';
import { errorReason, type StepReason } from '../../../shared/reasons.js';
import { describeIssues } from '../../../shared/schemas/issues.js';
import { softwareSchema } from '../../../shared/schemas/software.js';
import { kubeClients } from '../../../shared/k8s/clients.js';
import { readOrUndefined } from '../../../shared/k8s/api-errors.js';
import { applyConditions } from '../../../shared/k8s/condition-writer.js';
import { getCustomObject } from '../../../shared/k8s/custom-objects.js';
import { recordEvent } from '../../../shared/k8s/events.js';
import type { StoredObject } from '../../../shared/k8s/stored-object.js';
import { clusterNodesFrom, findClusterConfigMap, type ClusterNode } from '../cluster-nodes.js';
import type { SoftwareInstallConfig } from '../config.js';
import { HostLeases } from '../host-lease.js';
import { hostKeyVerification } from '../host-keys.js';
import {
  SoftwareCondition,
  failSoftware,
  softwareIdentity,
  softwareRef,
  softwareTarget,
  type HostStatus,
} from '../software-status.js';
import { functionName, installJobManager } from '../name.js';
import { softwareLists } from '../package-checks.js';
import { packageWord } from '../ssh/command.js';
import { runRetriedInstall } from '../ssh/host-install.js';
import { packagesForRoles, planInstall, type HostInstallResult } from '../ssh/install.js';

/**
 * The install Job's work (contract section 11): one Software generation, every node its cluster
 * has now, one apt at a time per host (Lease), retries with backoff, per-host results written to
 * that Software's status. Everything it acts on is read from the API here, never taken from the
 * function that created the Job: the Job's arguments only name the Software and its generation.
 */

export const installJobArgsSchema = z.object({
  namespace: z.string().min(1),
  name: z.string().min(1),
  generation: z.coerce.number().int().positive(),
});
export type InstallJobArgs = z.infer<typeof installJobArgsSchema>;

export interface InstallJobContext {
  kubeConfig: KubeConfig;
  config: SoftwareInstallConfig;
  log: Logger;
  /** This installer in Lease holder names: the Job's pod name. */
  instance: string;
  /** Fires when the pod is asked to stop (SIGTERM): the polling ends, the installs run on. */
  signal?: AbortSignal;
  /** How often the Job checks that its Software still exists while it polls. Default 5 s. */
  softwareCheckMs?: number;
}

export type InstallJobOutcome =
  { kind: 'gone' | 'superseded' } | { kind: 'installed' | 'failed'; reason: string; hosts: HostStatus[] };

/** The nodes an install covered, as status records them: the next run adds the ones that joined since. */
export const installedNodeSchema = z.object({ node: z.string(), ip: z.string() });
export type InstalledNode = z.infer<typeof installedNodeSchema>;

const errorTailLines = 5;

export async function runInstallJob(
  context: InstallJobContext,
  args: InstallJobArgs,
): Promise<InstallJobOutcome> {
  const clients = kubeClients(context.kubeConfig);
  const log = context.log.child({ software: `${args.namespace}/${args.name}`, generation: args.generation });
  const live = await getCustomObject(clients, softwareTarget(args.namespace, args.name));
  if (!live) {
    log.info('the Software is gone; nothing to install');
    return { kind: 'gone' };
  }
  if ((live.metadata.generation ?? 0) !== args.generation) {
    log.info('the Software changed since this Job was made; its own Job installs it', {
      current: live.metadata.generation,
    });
    return { kind: 'superseded' };
  }
  const fail = async (
    reason: StepReason,
    message: string,
    hosts?: HostStatus[],
  ): Promise<InstallJobOutcome> => {
    await failSoftware(clients, live, { reason, message }, log, hosts, {}, installJobManager);
    return { kind: 'failed', reason, hosts: hosts ?? [] };
  };

  const parsed = softwareSchema.safeParse(live);
  if (!parsed.success)
    return fail(
      'InvalidSoftware',
      `Software ${args.namespace}/${args.name} is invalid: ${describeIssues(parsed.error)}`,
    );
  const software = parsed.data;
  const cluster = software.metadata.labels.cluster;
  const configMap = await findClusterConfigMap(clients, args.namespace, cluster);
  if (!configMap)
    return fail(
      'ClusterNotReady',
      `Cluster ${cluster} has no node ConfigMap (label cluster=${cluster}) any more`,
    );
  const nodes = clusterNodesFrom(configMap.data ?? {});

  const secretName = context.config.SSH_KEY_SECRET;
  const secret = await readOrUndefined(`read Secret ${args.namespace}/${secretName}`, () =>
    clients.core.readNamespacedSecret({ name: secretName, namespace: args.namespace }),
  );
  const keyData = secret?.data?.id_rsa;
  if (!keyData)
    return fail(
      'SshKeySecretMissing',
      `SSH key not found: Secret ${secretName} with key id_rsa in namespace ${args.namespace}`,
    );

  const targets = nodes.map((node) => ({
    node: node.label,
    ip: node.ip,
    roles: node.roles,
    packages: packagesForRoles(node.roles, softwareLists(software)),
  }));
  let plans;
  try {
    plans = planInstall(
      targets,
      context.config.SSH_USER,
      context.config.APT_LOCK_TIMEOUT_SECONDS,
      // One install per Software generation and host: the Job's next pod, or another Job of the
      // same generation, attaches to the apt still running instead of starting another.
      `${args.namespace}/${args.name}/${live.metadata.uid ?? ''}@${args.generation}`,
    );
  } catch (error) {
    if (!(error instanceof BpaError)) throw error;
    return fail(errorReason(error), error.message);
  }
  const hostKeys = await hostKeyVerification(context.config, clients, live, cluster);
  const ref = softwareRef(live);
  const leases = new HostLeases({
    kubeConfig: context.kubeConfig,
    namespace: args.namespace,
    holder: `${args.namespace}/${args.name}@${args.generation}/${context.instance}`,
    durationSeconds: context.config.HOST_LEASE_SECONDS,
    // A host busy for longer than a whole install of its own is a fault worth a retry.
    waitTimeoutMs:
      (context.config.SSH_TIMEOUT_SECONDS + context.config.SSH_CONNECT_TIMEOUT_SECONDS) * 1000 * 2,
    logger: log,
  });
  log.info('installing', { cluster, hosts: plans.length, nodes: nodes.length });
  const delay = context.config.INSTALL_RETRY_DELAY_SECONDS * 1000;
  // Polling ends (the installs run on, detached on their hosts) when the Software is deleted or
  // the pod is asked to stop; nothing here ever signals apt or dpkg.
  const stop = new AbortController();
  const onStop = () => stop.abort('the install Job is stopping');
  if (context.signal?.aborted) onStop();
  context.signal?.addEventListener('abort', onStop, { once: true });
  const watch = setInterval(() => {
    void getCustomObject(clients, softwareTarget(args.namespace, args.name)).then(
      (now) => {
        if (!now || now.metadata.uid !== live.metadata.uid) stop.abort('the Software was deleted');
      },
      () => undefined, // the API is briefly away: check again at the next tick
    );
  }, context.softwareCheckMs ?? 5000);
  watch.unref();
  const results = await runRetriedInstall({
    hosts: plans,
    port: context.config.SSH_PORT,
    username: context.config.SSH_USER,
    privateKey: Buffer.from(keyData, 'base64'),
    hostKeys,
    connectTimeoutMs: context.config.SSH_CONNECT_TIMEOUT_SECONDS * 1000,
    commandTimeoutMs: context.config.SSH_TIMEOUT_SECONDS * 1000,
    concurrency: context.config.SSH_CONCURRENCY,
    logger: log,
    lock: leases,
    retry: { attempts: context.config.INSTALL_ATTEMPTS, baseDelayMs: delay, maxDelayMs: delay * 16 },
    pollIntervalMs: context.config.INSTALL_POLL_SECONDS * 1000,
    signal: stop.signal,
    onRetry: (host, attempt, result, delayMs) =>
      void recordEvent(
        clients,
        {
          object: softwareIdentity(ref),
          type: 'Warning',
          reason: 'InstallRetrying',
          message: `Attempt ${attempt} of ${context.config.INSTALL_ATTEMPTS} failed on ${host.node} (${host.ip}): ${result.error?.message ?? 'failed'}; retrying in ${Math.round(delayMs / 1000)}s`,
          component: functionName,
        },
        log,
      ),
  }).finally(() => {
    clearInterval(watch);
    context.signal?.removeEventListener('abort', onStop);
  });
  if (stop.signal.aborted) {
    const left = results
      .filter((r) => r.error?.reason === 'PollingStopped')
      .map((r) => `${r.node} (${r.ip})`);
    const now = await getCustomObject(clients, softwareTarget(args.namespace, args.name));
    if (!now || now.metadata.uid !== live.metadata.uid) {
      // Deleting a Software uninstalls nothing (contract section 11), and stops nothing either.
      log.info('the Software was deleted; stopped polling, the installs run on to their end', {
        hosts: left,
      });
      return { kind: 'gone' };
    }
    // The pod is stopping and its Software stays: the Job's next pod attaches to the same installs.
    throw transient(
      'InstallJobStopped',
      `The install Job's pod was stopped while installing on ${left.join(', ') || 'no host'}; the installs run on, and the Job's next pod polls them`,
    );
  }
  const fingerprints = hostKeys.mode === 'trust-on-first-use' ? (hostKeys.fingerprints ?? {}) : {};
  const byHost = new Map(targets.map((t) => [`${t.node}\u0000${t.ip}`, t]));
  const hosts = results.map((result) => {
    const target = byHost.get(`${result.node}\u0000${result.ip}`);
    const words = [...new Set((target?.packages ?? []).map(packageWord))];
    return hostStatus(result, target?.roles ?? [], words, fingerprints[result.ip]);
  });
  const installedNodes: InstalledNode[] = nodes.map((node) => ({ node: node.label, ip: node.ip }));

  const failed = hosts.filter((host) => host.error !== undefined);
  if (failed.length > 0) {
    const details = failed.map((h) => `${h.node} (${h.ip}): ${(h.error ?? '').split('\n')[0]}`).join('; ');
    return fail(
      'InstallFailed',
      `Installation failed on ${failed.length} of ${hosts.length} hosts: ${details}`.slice(0, 4000),
      hosts,
    );
  }
  const message = installedMessage(hosts, nodes, cluster);
  // Applied as the Job's own field manager (the function's fields stay); the claim released.
  const written = await applyConditions(clients, softwareTarget(ref.namespace, ref.name), {
    ref,
    conditions: [
      { type: SoftwareCondition.installed, status: 'True', reason: 'Installed', message },
      { type: SoftwareCondition.ready, status: 'True', reason: 'Installed', message },
    ],
    fields: { hosts, installedNodes, claim: undefined },
    manager: installJobManager,
  });
  if (written.outcome === 'written')
    await recordEvent(
      clients,
      {
        object: softwareIdentity(ref),
        type: 'Normal',
        reason: 'Installed',
        message,
        component: functionName,
      },
      log,
    );
  log.info('installed', { hosts: hosts.length, outcome: written.outcome });
  return { kind: 'installed', reason: 'Installed', hosts };
}

const installedMessage = (hosts: HostStatus[], nodes: ClusterNode[], cluster: string) =>
  hosts.length === 0
    ? `Nothing to install on the ${nodes.length} nodes of cluster ${cluster}`
    : `Installed on ${hosts.length} host${hosts.length === 1 ? '' : 's'} of cluster ${cluster}`;

/** A host's result as status records it (attempts: the Job's tries of the host; connectMs: its session's connect time). */
export function hostStatus(
  result: HostInstallResult & { attempts?: number },
  roles: HostStatus['roles'],
  packages: string[],
  trusted?: string,
): HostStatus & { attempts?: number } {
  const errorText = result.error
    ? [result.error.message, ...result.stderrTail.slice(-errorTailLines)].join('\n').slice(-2000)
    : undefined;
  // Only a key that was accepted becomes the recorded one; a refused key never replaces it.
  const fingerprint = result.error?.reason.startsWith('HostKey')
    ? trusted
    : (result.hostKeyFingerprint ?? trusted);
  return {
    node: result.node,
    ip: result.ip,
    roles: [...roles],
    packages,
    exitCode: result.exitCode,
    ...(errorText ? { error: errorText } : {}),
    startedAt: result.startedAt,
    durationMs: Math.round(result.durationMs),
    ...(result.attempts !== undefined ? { attempts: result.attempts } : {}),
    ...(fingerprint ? { hostKeyFingerprint: fingerprint } : {}),
    ...(result.connectDurationMs !== undefined ? { connectMs: Math.round(result.connectDurationMs) } : {}),
  };
}

/** Nodes of the cluster now that the last successful install did not cover (joined since). */
export function nodesNotInstalled(
  installed: readonly InstalledNode[],
  current: readonly ClusterNode[],
): ClusterNode[] {
  const done = new Set(installed.map((n) => `${n.node}\u0000${n.ip}`));
  return current.filter((node) => !done.has(`${node.label}\u0000${node.ip}`));
}

/** status.installedNodes of a Software, or [] when absent or malformed. */
export function installedNodesOf(object: StoredObject): InstalledNode[] {
  const parsed = z.array(installedNodeSchema).safeParse(object.status?.installedNodes);
  return parsed.success ? parsed.data : [];
}
