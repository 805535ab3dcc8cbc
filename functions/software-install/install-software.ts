import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import type { CloudEvent } from 'cloudevents';
import { clusterConfigMapName } from '../../shared/core/names.js';
import { BpaError } from '../../shared/errors.js';
import { Reason, errorReason, retriedBySweep } from '../../shared/reasons.js';
import { describeIssues } from '../../shared/schemas/issues.js';
import { softwareSchema, type Software } from '../../shared/schemas/software.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { readOrUndefined } from '../../shared/k8s/api-errors.js';
import { writeConditions } from '../../shared/k8s/condition-writer.js';
import { conditionFor, conditionsOf, setCondition } from '../../shared/k8s/conditions.js';
import { getCustomObject } from '../../shared/k8s/custom-objects.js';
import { pauseGate } from '../../shared/k8s/paused.js';
import { replaceStatus } from '../../shared/k8s/status-writer.js';
import { recordEvent } from '../../shared/k8s/events.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import type { FunctionContext } from '../../shared/server/types.js';
import { forgetHostKeys, pendingForget, pendingRetry } from './annotations.js';
import { clusterGate } from './cluster-gate.js';
import { clusterNodesFrom, findClusterConfigMap, type ClusterNode } from './cluster-nodes.js';
import { installedNodesOf, nodesNotInstalled } from './install-job/run.js';
import { launchInstallJob } from './launch-install-job.js';
import { announceJobOutcome, outcomeToAnnounce } from './job-outcome.js';
import { judgeInstallJob, pendingInstallJob, type InstallJobVerdict } from './install-job-state.js';
import type { SoftwareInstallConfig } from './config.js';
import { hostKeyVerification, readKnownHosts } from './host-keys.js';
import { hostInstalls, sshCommandDuration, sshConnectDuration } from './metrics.js';
import {
  SoftwareCondition,
  activeClaim,
  completeSoftware,
  failSoftware,
  softwareIdentity,
  softwareRef,
  softwareTarget,
  type HostStatus,
} from './software-status.js';
import { functionName } from './name.js';
import { buildInstallCommand, packageSpecsFromItems, packageWord } from './ssh/command.js';
import { packagesForRoles, planInstall, runInstall, type HostInstallResult } from './ssh/install.js';

/** Why nothing was installed now; `event` is what to announce, if anything. */
export type InstallOutcome =
  { kind: 'installed' | 'failed'; event?: CloudEvent<unknown> } | { kind: 'waiting' | 'skipped' };

const errorTailLines = 5;

/**
 * Installs one Software on its cluster's nodes (contract section 7), if this generation is
 * not installed, failed or being installed already:
 * validate → find the cluster's ConfigMap (none: wait, ClusterNotReady) → SSH key → claim
 * (Installed=Unknown Installing, resourceVersion precondition) → SSH to every node in
 * parallel → per-host results, Installed/Ready, software.installed or software.failed.
 */
export async function installSoftware(
  context: FunctionContext<SoftwareInstallConfig>,
  clients: KubeClients,
  stored: StoredObject,
): Promise<InstallOutcome> {
  const pause = await pauseGate(clients, stored, { component: functionName, log: context.log });
  if (pause.stop) return { kind: 'skipped' };
  let live = pause.object;
  // An outcome an install Job recorded: announced once, before anything else is decided.
  const recorded = outcomeToAnnounce(live);
  const announcement = recorded ? await announceJobOutcome(clients, live) : undefined;
  if (recorded && announcement)
    return { kind: recorded.installed ? 'installed' : 'failed', event: announcement };
  let ref = softwareRef(live);
  const installed = conditionFor(conditionsOf(live), SoftwareCondition.installed, ref.generation);
  const retry = pendingRetry(live);
  const forget = pendingForget(live);
  const requested = retry !== undefined || forget !== undefined;
  // Installed for this generation: again only when asked, or when nodes joined (checked below).
  const wasInstalled = installed?.status === 'True';
  if (installed?.status === 'False' && !retriedBySweep(installed.reason) && !requested)
    return { kind: 'skipped' };
  const log = context.log.child({ software: `${ref.namespace}/${ref.name}` });
  // An install Job of this generation runs, or ended without recording an outcome.
  const pendingJob = pendingInstallJob(live);
  if (pendingJob && !requested) {
    const verdict = await judgeInstallJob(clients, live, pendingJob);
    if (verdict?.kind === 'running') return { kind: 'skipped' };
    if (verdict?.kind === 'ended') return failEndedJob(clients, live, verdict, log);
  }
  if (activeClaim(live, ref.generation)) return { kind: 'skipped' };

  // Package words first, on the raw spec: a bad word is InvalidPackageName (or Version) by its own
  // reason, also where the CRD cannot see it (a map's key, `{openssh-server-: {version: 1}}`).
  try {
    validateRawPackages(live, context.config.SSH_USER);
  } catch (error) {
    if (!(error instanceof BpaError)) throw error;
    if (error.reason === Reason.InvalidPackageName || error.reason === Reason.InvalidPackageVersion)
      return {
        kind: 'failed',
        event: await failSoftware(clients, live, { reason: errorReason(error), message: error.message }, log),
      };
  }
  const parsed = softwareSchema.safeParse(live);
  if (!parsed.success) {
    const message = `Software ${ref.namespace}/${ref.name} is invalid: ${describeIssues(parsed.error)}`;
    return {
      kind: 'failed',
      event: await failSoftware(clients, live, { reason: Reason.InvalidSoftware, message }, log),
    };
  }
  const software = parsed.data;
  try {
    validatePackages(software, context.config.SSH_USER);
  } catch (error) {
    if (!(error instanceof BpaError)) throw error;
    return {
      kind: 'failed',
      event: await failSoftware(clients, live, { reason: errorReason(error), message: error.message }, log),
    };
  }

  const cluster = software.metadata.labels.cluster;
  const configMap = await findClusterConfigMap(clients, ref.namespace, cluster);
  // Installed already and the cluster is being re-provisioned: cluster.ready brings it back here.
  if (!configMap) {
    if (wasInstalled && !requested) return { kind: 'skipped' };
    await waitForCluster(context, clients, live, cluster);
    return { kind: 'waiting' };
  }
  const gate = await clusterGate(clients, ref.namespace, cluster, configMap);
  if (!gate.open) {
    if (wasInstalled && !requested) return { kind: 'skipped' };
    await waitForCluster(context, clients, live, cluster, gate.message);
    return { kind: 'waiting' };
  }
  const nodes = clusterNodesFrom(configMap.data ?? {});
  const joined = nodesNotInstalled(installedNodesOf(live), nodes);
  if (wasInstalled && !requested && joined.length === 0) return { kind: 'skipped' };
  if (wasInstalled && joined.length > 0)
    log.info('nodes joined the cluster since the install; installing again', {
      nodes: joined.map((n) => `${n.label} (${n.ip})`),
    });
  if (forget) {
    const stored = await forgetHostKeys(clients, live, cluster, forget, log);
    if (!stored) return { kind: 'skipped' };
    live = stored;
    ref = softwareRef(live);
  }

  const secretName = context.config.SSH_KEY_SECRET;
  const secret = await readOrUndefined(`read Secret ${ref.namespace}/${secretName}`, () =>
    clients.core.readNamespacedSecret({ name: secretName, namespace: ref.namespace }),
  );
  const keyData = secret?.data?.id_rsa;
  if (!keyData) {
    const message = `SSH key not found: Secret ${secretName} with key id_rsa in namespace ${ref.namespace}`;
    return {
      kind: 'failed',
      event: await failSoftware(clients, live, { reason: Reason.SshKeySecretMissing, message }, log),
    };
  }
  const privateKey = Buffer.from(keyData, 'base64');

  const targets = nodes.map((node) => ({
    node: node.label,
    ip: node.ip,
    roles: node.roles,
    packages: packagesForRoles(node.roles, softwareLists(software)),
  }));
  const plans = planInstall(
    targets,
    context.config.SSH_USER,
    context.config.APT_LOCK_TIMEOUT_SECONDS,
    `${ref.namespace}/${ref.name}/${ref.uid}@${ref.generation}`,
  );
  // Read before the claim: a transient fault here (KnownHostsUnreadable) must not leave a claim
  // behind that makes every retry step back until it expires. The install Job reads its own.
  const job = context.config.INSTALL_RUNNER === 'job';
  const hostKeys = job ? undefined : await hostKeyVerification(context.config, clients, live, cluster);
  // A pinned known_hosts goes to the Job as text: it must never fall back to trust on first use.
  const knownHosts =
    job && context.config.SSH_KNOWN_HOSTS ? await readKnownHosts(context.config.SSH_KNOWN_HOSTS) : undefined;
  const claimed = await claim(context, clients, live, plans.length, retry);
  if (!claimed) {
    log.info('another instance is installing this generation');
    return { kind: 'skipped' };
  }

  if (context.config.INSTALL_RUNNER === 'job') {
    // A new run of the same generation (retry, forgotten keys, joined nodes) is a new Job.
    const again = wasInstalled || requested || installed?.status === 'False';
    const runId = again
      ? createHash('sha256')
          .update(JSON.stringify([retry, forget?.value, nodes.map((n) => [n.label, n.ip])]))
          .digest('hex')
          .slice(0, 8)
      : '';
    let jobName: string;
    try {
      jobName = await launchInstallJob(
        context.config,
        clients,
        claimed,
        runId,
        context.config.INSTALL_JOB_DEADLINE_SECONDS || claimSeconds(context.config, plans.length),
        knownHosts,
      );
    } catch (error) {
      // A look-alike ServiceAccount, Role, RoleBinding or Job in the way: touched nothing, no Job.
      if (!(error instanceof BpaError) || error.reason !== Reason.ObjectConflict) throw error;
      log.warn('an object of the install run is not ours; no install Job', { message: error.message });
      return {
        kind: 'failed',
        event: await failSoftware(
          clients,
          claimed,
          { reason: errorReason(error), message: error.message },
          log,
        ),
      };
    }
    const message = `Installing on ${plans.length} host${plans.length === 1 ? '' : 's'} in Job ${jobName}`;
    await writeConditions(clients, softwareTarget(ref.namespace, ref.name), ref, {
      conditions: [
        { type: SoftwareCondition.installed, status: 'Unknown', reason: Reason.Installing, message },
        { type: SoftwareCondition.ready, status: 'Unknown', reason: Reason.Installing, message },
      ],
      fields: { installJob: jobName },
    });
    await recordEvent(
      clients,
      {
        object: softwareIdentity(ref),
        type: 'Normal',
        reason: 'InstallJobCreated',
        message,
        component: functionName,
      },
      log,
    );
    log.info('install job created', { cluster, job: jobName, hosts: plans.length });
    return { kind: 'waiting' };
  }

  if (!hostKeys) throw new Error('host keys are read before the claim for in-request installs');
  log.info('installing', { cluster, hosts: plans.length });
  const results = await runInstall({
    hosts: plans,
    port: context.config.SSH_PORT,
    username: context.config.SSH_USER,
    privateKey,
    hostKeys,
    connectTimeoutMs: context.config.SSH_CONNECT_TIMEOUT_SECONDS * 1000,
    commandTimeoutMs: context.config.SSH_TIMEOUT_SECONDS * 1000,
    concurrency: context.config.SSH_CONCURRENCY,
    logger: log,
  });
  const fingerprints = hostKeys.mode === 'trust-on-first-use' ? (hostKeys.fingerprints ?? {}) : {};
  const byNode = new Map(targets.map((t) => [t.node + '\u0000' + t.ip, t]));
  const hosts = results.map((result) => {
    recordHostMetrics(context, result);
    const target = byNode.get(result.node + '\u0000' + result.ip);
    const words = [...new Set((target?.packages ?? []).map(packageWord))];
    return hostStatus(result, target?.roles ?? [], words, fingerprints[result.ip]);
  });
  return finish(context, clients, claimed, cluster, nodes, hosts);
}

/**
 * Records an install Job that ended without an outcome: Installed and Ready False
 * (InstallJobFailed, the Job's own reason in the message), announced once (announcedJob), and
 * re-run only by `bpa.akraino.org/retry` (the Job's backoffLimit was its retries).
 */
async function failEndedJob(
  clients: KubeClients,
  live: StoredObject,
  verdict: Extract<InstallJobVerdict, { kind: 'ended' }>,
  log: FunctionContext<SoftwareInstallConfig>['log'],
): Promise<InstallOutcome> {
  // Read again: the Job's pod writes before it exits, so once its Job has ended, a fresh read
  // that still says Installing is the last word (a listed copy may predate the pod's write).
  const fresh = await getCustomObject(
    clients,
    softwareTarget(live.metadata.namespace ?? '', live.metadata.name),
  );
  if (!fresh || pendingInstallJob(fresh) !== verdict.job) return { kind: 'skipped' };
  log.warn('install job ended without recording an outcome', { job: verdict.job, message: verdict.message });
  const event = await failSoftware(
    clients,
    fresh,
    { reason: verdict.reason, message: verdict.message },
    log,
    undefined,
    { announcedJob: verdict.job },
  );
  return event ? { kind: 'failed', event } : { kind: 'skipped' };
}

const softwareLists = (software: Software) => ({
  masterSoftware: software.spec.masterSoftware ?? [],
  workerSoftware: software.spec.workerSoftware ?? [],
});

/** The package words of a not yet parsed Software (lists of any shape: only the words are judged here). */
function validateRawPackages(live: StoredObject, username: string) {
  const spec = (live as { spec?: Record<string, unknown> }).spec ?? {};
  for (const key of ['masterSoftware', 'workerSoftware']) {
    const items = Array.isArray(spec[key]) ? (spec[key] as unknown[]) : [];
    const packages = items.flatMap((item) => {
      try {
        return packageSpecsFromItems([item]);
      } catch {
        return []; // not a word or a {name: {version}} map: the schema says why
      }
    });
    for (const pkg of packages) packageWord(pkg);
    if (packages.length > 0) buildInstallCommand({ packages, username });
  }
}

/** Every package word must be valid before anything connects (names, versions, length). */
function validatePackages(software: Software, username: string) {
  for (const roles of [['master'], ['worker']] as const) {
    const packages = packagesForRoles(roles, softwareLists(software));
    for (const spec of packages) packageWord(spec);
    if (packages.length > 0) buildInstallCommand({ packages, username });
  }
}

/** No cluster ConfigMap yet: say so on status once, and wait for cluster.ready. */
async function waitForCluster(
  context: FunctionContext<SoftwareInstallConfig>,
  clients: KubeClients,
  live: StoredObject,
  cluster: string,
  why?: string,
) {
  const ref = softwareRef(live);
  const message =
    why ??
    `Waiting for cluster ${cluster}: its ConfigMap ${clusterConfigMapName(cluster)} (label cluster=${cluster}) does not exist yet; the install starts when the cluster is ready`;
  const result = await writeConditions(clients, softwareTarget(ref.namespace, ref.name), ref, {
    conditions: [
      { type: SoftwareCondition.installed, status: 'Unknown', reason: Reason.ClusterNotReady, message },
      { type: SoftwareCondition.ready, status: 'False', reason: Reason.ClusterNotReady, message },
    ],
    alreadyDone: (conditions) =>
      conditionFor(conditions, SoftwareCondition.ready, ref.generation)?.reason === Reason.ClusterNotReady,
  });
  if (result.outcome === 'written')
    await recordEvent(
      clients,
      {
        object: softwareIdentity(ref),
        type: 'Normal',
        reason: Reason.ClusterNotReady,
        message,
        component: functionName,
      },
      context.log,
    );
  context.log.info('cluster not ready; waiting for cluster.ready', { cluster, status: result.outcome });
}

/** How long an install of `hostCount` hosts may take: the claim's expiry and the Job's deadline. */
function claimSeconds(config: SoftwareInstallConfig, hostCount: number): number {
  const rounds = Math.max(1, Math.ceil(hostCount / config.SSH_CONCURRENCY));
  const attempt = config.SSH_TIMEOUT_SECONDS + config.SSH_CONNECT_TIMEOUT_SECONDS;
  const retries = config.INSTALL_ATTEMPTS * attempt + config.INSTALL_RETRY_DELAY_SECONDS * 16;
  return rounds * (config.INSTALL_RUNNER === 'job' ? retries : attempt) + 60;
}

/**
 * Claims this generation: Installed=Unknown (Installing) plus a claim with an expiry, written
 * with the read resourceVersion. A 409 re-reads: if someone else claimed it, we step back.
 */
async function claim(
  context: FunctionContext<SoftwareInstallConfig>,
  clients: KubeClients,
  live: StoredObject,
  hostCount: number,
  retry?: string,
): Promise<StoredObject | undefined> {
  const ref = softwareRef(live);
  const target = softwareTarget(ref.namespace, ref.name);
  const seconds = claimSeconds(context.config, hostCount);
  const message = `Installing on ${hostCount} host${hostCount === 1 ? '' : 's'}`;
  let current: StoredObject | undefined = live;
  for (let attempt = 1; attempt <= 5 && current; attempt++) {
    if (current.metadata.uid !== ref.uid || current.metadata.generation !== ref.generation) return undefined;
    if (activeClaim(current, ref.generation)) return undefined;
    let conditions = conditionsOf(current);
    for (const type of [SoftwareCondition.installed, SoftwareCondition.ready])
      conditions = setCondition(conditions, {
        type,
        status: 'Unknown',
        reason: Reason.Installing,
        message,
        observedGeneration: ref.generation,
      });
    const status = {
      ...current.status,
      conditions,
      // The Job of this run is named once it exists; an older run's must not be judged meanwhile.
      installJob: undefined,
      // The retry value this run answers: the same value does not re-run it again.
      ...(retry !== undefined ? { retry } : {}),
      claim: {
        generation: ref.generation,
        holder: process.env.HOSTNAME ?? hostname(),
        expiresAt: new Date(Date.now() + seconds * 1000).toISOString(),
      },
    };
    const result = await replaceStatus(clients, target, current, status);
    if (result.outcome === 'written') return result.object;
    if (result.outcome === 'gone') return undefined;
    current = await getCustomObject(clients, target);
  }
  return undefined;
}

function hostStatus(
  result: HostInstallResult,
  roles: HostStatus['roles'],
  packages: string[],
  trusted?: string,
): HostStatus {
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
    ...(fingerprint ? { hostKeyFingerprint: fingerprint } : {}),
  };
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
): Promise<InstallOutcome> {
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
