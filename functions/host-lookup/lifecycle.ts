import { clusterNameInUseMessage } from '../../shared/core/cluster-claim.js';
import { cleanupFinalizer, retryAnnotation } from '../../shared/core/lifecycle-names.js';
import {
  labelsChanged,
  labelsToRecord,
  observedLabelsField,
  recordedLabelsOf,
} from '../../shared/core/recorded-labels.js';
import { kudJobName } from '../../shared/core/names.js';
import {
  afterRename,
  releasingClustersField,
  releasingClustersOf,
} from '../../shared/core/released-clusters.js';
import { Reason } from '../../shared/reasons.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { claimClusterName } from '../../shared/k8s/cluster-claims.js';
import { conditionFor, conditionsOf, findCondition } from '../../shared/k8s/conditions.js';
import { ensureFinalizer } from '../../shared/k8s/finalizers.js';
import { ProvisioningCondition, provisioningTarget } from '../../shared/k8s/provisioning.js';
import { applyStatusDecided } from '../../shared/k8s/status-apply.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import { isDeepStrictEqual } from 'node:util';

/** The conditions of the chain's steps: dropped when the chain re-runs for the same generation. */
const stepConditions: readonly string[] = [
  ProvisioningCondition.hostsResolved,
  ProvisioningCondition.inventoryRendered,
  ProvisioningCondition.jobLaunched,
  ProvisioningCondition.kudInstalled,
];

const retryValueOf = (live: StoredObject) => live.metadata.annotations?.[retryAnnotation] ?? '';
const recordedRetryOf = (live: StoredObject) =>
  typeof live.status?.retry === 'string' ? live.status.retry : '';

/**
 * Why the chain must run again for the same generation (contract section 10), or undefined:
 * - the `cluster` or `cluster-type` label differs from the labels the status describes (labels
 *   do not bump the generation; fixing an invalid label on a failed Provisioning makes it go on);
 * - `bpa.akraino.org/retry` has a new value and the Provisioning is failed (Ready False).
 */
export function rerunReason(live: StoredObject): string | undefined {
  if (labelsChanged(live.metadata.labels, live.status)) return 'labels changed';
  const retry = retryValueOf(live);
  if (retry === '' || retry === recordedRetryOf(live)) return undefined;
  const ready = conditionFor(conditionsOf(live), ProvisioningCondition.ready, live.metadata.generation ?? 0);
  return ready?.status === 'False' ? `${retryAnnotation}=${retry}` : undefined;
}

/**
 * A Provisioning's first handling (its status records no labels, no retry and no renamed cluster
 * yet, and nothing is to re-run) records its labels with the step's ending, not in a write of
 * their own before it: one status write less per Provisioning (issue 26 item 4). These are the
 * fields the ending then carries; undefined when `recordHandling` writes first. A handling that
 * ends in a fault records them before the fault (functions/host-lookup/index.ts), so a rename
 * before the retry still releases a name it claimed.
 */
export function labelsWithEnding(
  live: StoredObject,
  rerun: string | undefined,
): Record<string, unknown> | undefined {
  if (rerun || recordedLabelsOf(live.status) !== undefined) return undefined;
  if (recordedRetryOf(live) !== '' || releasingClustersOf(live.status).length > 0) return undefined;
  return { [observedLabelsField]: labelsToRecord(live.metadata.labels) };
}

/**
 * Records what this handling is about, applied as `manager` (shared/k8s/status-apply.ts) on the
 * prologue's read: the labels (status.observedLabels) and the retry value acted on (status.retry).
 * With `rerun`, the step conditions of the chain are dropped too, whoever wrote them, so every
 * step runs again for this generation (a new Job, via the launch hash or the retry value).
 * Returns the object as stored afterwards.
 */
export async function recordHandling(
  clients: KubeClients,
  manager: string,
  live: StoredObject,
  rerun: string | undefined,
): Promise<StoredObject | undefined> {
  // Nothing to record on the object just read: no second read (issue 26).
  if (!rerun && isDeepStrictEqual(recordedLabelsOf(live.status), labelsToRecord(live.metadata.labels)))
    return live;
  const target = provisioningTarget(live.metadata.namespace ?? '', live.metadata.name);
  // The first attempt on the prologue's read (no second GET); a 409 reads again.
  const result = await applyStatusDecided(
    clients,
    target,
    manager,
    (fresh) => {
      if (fresh.metadata.uid !== live.metadata.uid) return undefined;
      const labels = labelsToRecord(fresh.metadata.labels);
      const retry = rerun ? retryValueOf(fresh) : recordedRetryOf(fresh);
      const sameLabels = isDeepStrictEqual(recordedLabelsOf(fresh.status), labels);
      if (!rerun && sameLabels && recordedRetryOf(fresh) === retry) return undefined;
      const ready = findCondition(conditionsOf(fresh), ProvisioningCondition.ready);
      const conditions =
        rerun && ready
          ? [
              {
                type: ProvisioningCondition.ready,
                status: 'Unknown' as const,
                reason: Reason.Provisioning,
                message: `Re-running the chain: ${rerun}`,
                ...(ready.observedGeneration !== undefined
                  ? { observedGeneration: ready.observedGeneration }
                  : {}),
              },
            ]
          : [];
      // A renamed cluster: its old name is released by kud-job-launch once its objects are gone.
      const previous = recordedLabelsOf(fresh.status)?.cluster;
      const releasing = afterRename(
        releasingClustersOf(fresh.status),
        previous,
        labels.cluster,
        previous !== undefined && fresh.status?.jobName === kudJobName(previous),
        new Date(),
      );
      return {
        conditions,
        ...(rerun ? { removeConditions: [...stepConditions] } : {}),
        fields: {
          [observedLabelsField]: labels,
          [releasingClustersField]: releasing.length > 0 ? releasing : undefined,
          ...(retry ? { retry } : {}),
          ...(rerun ? { job: undefined } : {}),
        },
      };
    },
    { first: live },
  );
  return result.outcome === 'gone' ? undefined : result.object;
}

/** `object`: the Provisioning as stored after the finalizer (the base of the step's status apply). */
export type Claim =
  { kind: 'mine'; object: StoredObject } | { kind: 'taken'; message: string } | { kind: 'gone' };

/**
 * One owner per cluster name: the finalizer first (so a claim is always released on deletion),
 * then the claim of the name in the functions' namespace.
 */
export async function claimCluster(
  clients: KubeClients,
  functionsNamespace: string,
  live: StoredObject,
  cluster: string,
): Promise<Claim> {
  const target = provisioningTarget(live.metadata.namespace ?? '', live.metadata.name);
  const object = await ensureFinalizer(clients, target, live, cleanupFinalizer);
  if (!object) return { kind: 'gone' };
  const claim = await claimClusterName(clients, functionsNamespace, cluster, {
    namespace: live.metadata.namespace ?? '',
    name: live.metadata.name,
    uid: live.metadata.uid ?? '',
  });
  return claim.kind === 'mine'
    ? { kind: 'mine', object }
    : { kind: 'taken', message: clusterNameInUseMessage(cluster, claim.holder) };
}
