import type { CloudEvent } from 'cloudevents';
import { BpaError } from '../../shared/errors.js';
import { Reason, errorReason, retriedBySweep } from '../../shared/reasons.js';
import { describeIssues } from '../../shared/schemas/issues.js';
import { softwareSchema } from '../../shared/schemas/software.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { readOrUndefined } from '../../shared/k8s/api-errors.js';
import { conditionFor, conditionsOf } from '../../shared/k8s/conditions.js';
import { pauseGate } from '../../shared/k8s/paused.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import type { FunctionContext } from '../../shared/server/types.js';
import { forgetHostKeys, pendingForget, pendingRetry } from './annotations.js';
import { claim } from './claim.js';
import { clusterGate } from './cluster-gate.js';
import { clusterNodesFrom, findClusterConfigMap } from './cluster-nodes.js';
import type { SoftwareInstallConfig } from './config.js';
import { installedNodesOf, nodesNotInstalled } from './install-job/run.js';
import { failEndedJob, judgeInstallJob, pendingInstallJob } from './install-job-state.js';
import { runIdOf, startInstallJob } from './start-install-job.js';
import { announceJobOutcome, outcomeToAnnounce } from './job-outcome.js';
import { softwareLists, validatePackages, validateRawPackages } from './package-checks.js';
import { readKnownHosts } from './host-keys.js';
import { SoftwareCondition, activeClaim, failSoftware, softwareRef } from './software-status.js';
import { functionName } from './name.js';
import { packagesForRoles, planInstall } from './ssh/install.js';
import { waitForCluster } from './wait-for-cluster.js';

/** Why nothing was installed now; `event` is what to announce, if anything. */
export type InstallOutcome =
  { kind: 'installed' | 'failed'; event?: CloudEvent<unknown> } | { kind: 'waiting' | 'skipped' };

/**
 * Decides whether one Software is installed on its cluster's nodes (contract sections 7 and
 * 11), if this generation is not installed, failed or being installed already:
 * validate → wait for the cluster (ClusterNotReady) → SSH key → claim (Installed=Unknown
 * Installing, resourceVersion precondition) → the install Job (start-install-job.ts), which does
 * the SSH work and records per-host results; its recorded outcome comes back here as the
 * Software's update and is announced (software.installed or software.failed).
 * The function never holds a request open for an install.
 */
export async function installSoftware(
  context: FunctionContext<SoftwareInstallConfig>,
  clients: KubeClients,
  stored: StoredObject,
): Promise<InstallOutcome> {
  const pause = await pauseGate(clients, stored, { component: functionName, log: context.log });
  if (pause.stop) return { kind: 'skipped' };
  return decideInstall(context, clients, pause.object);
}

/**
 * The install step proper, on an object the pause gate let through (the Software's own events
 * reach it through the shared step's prologue, index.ts; the sweep and cluster.ready through
 * installSoftware above). Whether there is anything to do is decided here, from the live object.
 */
export async function decideInstall(
  context: FunctionContext<SoftwareInstallConfig>,
  clients: KubeClients,
  gated: StoredObject,
): Promise<InstallOutcome> {
  let live = gated;
  // An outcome an install Job recorded: announced once, before anything else is decided.
  const recorded = outcomeToAnnounce(live);
  const announcement = recorded ? await announceJobOutcome(clients, live, context.metrics) : undefined;
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
    if (verdict?.kind === 'ended') {
      const event = await failEndedJob(clients, live, verdict, log);
      return event ? { kind: 'failed', event } : { kind: 'skipped' };
    }
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
  const plans = planInstall(
    nodes.map((node) => ({
      node: node.label,
      ip: node.ip,
      packages: packagesForRoles(node.roles, softwareLists(software)),
    })),
    context.config.SSH_USER,
    context.config.APT_LOCK_TIMEOUT_SECONDS,
    `${ref.namespace}/${ref.name}/${ref.uid}@${ref.generation}`,
  );
  const hostCount = plans.length;
  // A pinned known_hosts goes to the Job as text: it must never fall back to trust on first use.
  // Read before the claim: a transient fault here (KnownHostsUnreadable) must not leave a claim
  // behind that makes every retry step back until it expires.
  const knownHosts = context.config.SSH_KNOWN_HOSTS
    ? await readKnownHosts(context.config.SSH_KNOWN_HOSTS)
    : undefined;
  const claimed = await claim(context, clients, live, hostCount, retry);
  if (!claimed) {
    log.info('another instance is installing this generation');
    return { kind: 'skipped' };
  }

  // A new run of the same generation (retry, forgotten keys, joined nodes) is a new Job.
  const again = wasInstalled || requested || installed?.status === 'False';
  return startInstallJob(context, clients, claimed, {
    cluster,
    hostCount,
    knownHosts,
    runId: again ? runIdOf([retry, forget?.value, nodes.map((n) => [n.label, n.ip])]) : '',
    log,
  });
}
