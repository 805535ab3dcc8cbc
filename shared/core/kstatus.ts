/**
 * The kstatus conditions (sigs.k8s.io/cli-utils/pkg/kstatus, what Flux, Argo CD's kstatus users
 * and kpt read; contract section 13), derived in this one place from the step conditions and the
 * reasons catalogue, so no step has to remember them. Applied to every status write: Provisioning
 * and Software in shared/k8s/status-apply.ts `applyBody`, the Image in shared/k8s/image.ts.
 *
 * kstatus computes (status.Compute): deletionTimestamp set → Terminating; status.observedGeneration
 * behind metadata.generation → InProgress; a condition `Reconciling=True` → InProgress;
 * `Stalled=True` → Failed; else `Ready=True` → Current, `Ready` False or Unknown → InProgress. So
 * every write sets `status.observedGeneration` to the generation it was computed from, and:
 * - `Ready` True for that generation: neither condition (both are "abnormal-true": absent when false,
 *   as Flux's own controllers do);
 * - a step that cannot go on without a change: `Stalled=True` with that step's reason and message;
 * - anything else (a step running, waiting on the world, or not reached yet): `Reconciling=True`.
 * - paused (the `Paused` condition True, shared/k8s/paused.ts) and not Ready: `Reconciling=True`,
 *   reason Paused, never Stalled: no function acts, so nothing is progressing nor failing; a
 *   Flux `wait` times out naming the pause, Argo CD shows Progressing with it. A Ready object
 *   that is paused stays Current: its cluster is installed and works.
 * docs/deploy.md ("GitOps") lists what every state of contract sections 10-11 and of the Image gets.
 */
import { conditionReasons, type ConditionReason, type ReasonSpec } from '../reasons.js';
import { conditionSchema, type Condition } from '../schemas/kube.js';

export const KstatusCondition = { reconciling: 'Reconciling', stalled: 'Stalled' } as const;
const derivedTypes = new Set<string>(Object.values(KstatusCondition));
/** The pause's condition (shared/k8s/paused.ts): not a step, so never a stall nor a pending step. */
const pausedType = 'Paused';

/**
 * Reasons the sweep retries (sweep `retry`) that still cannot clear without someone changing
 * something: another resource must go (the cluster name's owner, the host's consumer, an object
 * the functions did not create) or the operator must configure the functions. kstatus calls that
 * Stalled, so a Flux `wait: true` fails with the message instead of timing out.
 */
const retriedButNeedsAChange: ReadonlySet<string> = new Set<ConditionReason>([
  'ClusterNameInUse',
  'ObjectConflict',
  'VmNamespacesNotConfigured',
  'HostInUse',
  // Metal3 retries some errors itself, but a bad BMC credential or image needs someone.
  'HostProvisioningFailed',
  // A host too small for its node: the spec or the hardware must change.
  'PreflightFailed',
]);

/** Decides whether a condition of the current generation means "cannot go on without a change". */
export type StallRule = (condition: Condition) => boolean;

/**
 * Provisioning and Software: a False step (or Ready) whose reason the sweep does not retry, i.e.
 * sweep `change` or `hourly` (an hourly retry is a courtesy, not progress), or a reason outside
 * the catalogue (the sweep never retries those either), or one of the retried reasons above.
 * False with a catalogued reason and no sweep (JobMissing) is work in flight: a new Job is coming.
 * Unknown is never a stall: it is a transient fault or a step running, always re-driven.
 */
export const catalogueStall: StallRule = (condition) => {
  if (condition.status !== 'False') return false;
  const reason = condition.reason ?? '';
  if (retriedButNeedsAChange.has(reason)) return true;
  const spec = (conditionReasons as Record<string, ReasonSpec>)[reason];
  if (!spec) return true;
  return spec.sweep === 'change' || spec.sweep === 'hourly';
};

/**
 * The Image: its reasons are its own (docs/images.md); it cannot go on without a new upload only
 * in phase Failed (a checksum or length mismatch), reported on `Ready`.
 */
export const imageStall =
  (phase: string | undefined): StallRule =>
  (condition) =>
    phase === 'Failed' && condition.type === 'Ready' && condition.status === 'False';

export interface KstatusSubject {
  metadata: { generation?: number; deletionTimestamp?: unknown };
}

export interface KstatusVerdict {
  type: (typeof KstatusCondition)[keyof typeof KstatusCondition];
  reason: string;
  message: string;
}

/**
 * The one kstatus condition an object's conditions call for (undefined: neither, it is Ready).
 * Pure: the conditions of other generations are history and count for nothing.
 */
export function kstatusVerdict(
  subject: KstatusSubject,
  conditions: readonly Condition[],
  stalls: StallRule = catalogueStall,
): KstatusVerdict | undefined {
  const generation = subject.metadata.generation;
  if (subject.metadata.deletionTimestamp)
    return { type: 'Reconciling', reason: 'Deleting', message: 'Deleted: the cleanup runs' };
  const current = conditions.filter(
    (c) =>
      !derivedTypes.has(c.type) &&
      (generation === undefined || c.observedGeneration === undefined || c.observedGeneration === generation),
  );
  const ready = current.find((c) => c.type === 'Ready');
  if (ready?.status === 'True') return undefined;
  const paused = current.find((c) => c.type === pausedType);
  if (paused?.status === 'True')
    return { type: 'Reconciling', reason: paused.reason ?? 'Paused', message: paused.message ?? 'Paused' };
  const steps = current.filter((c) => c.type !== pausedType);
  // Ready first: it carries the failing step's reason and message (shared/k8s/step-report.ts).
  const stalled = [...(ready ? [ready] : []), ...steps.filter((c) => c !== ready)].find(stalls);
  if (stalled)
    return {
      type: 'Stalled',
      reason: stalled.reason ?? 'Pending',
      message: stalled.message ?? `${stalled.type} is False`,
    };
  const pending = ready ?? steps.find((c) => c.status !== 'True');
  if (pending)
    return {
      type: 'Reconciling',
      reason: pending.reason ?? 'Pending',
      message: pending.message ?? `${pending.type} is ${pending.status}`,
    };
  return {
    type: 'Reconciling',
    reason: 'Pending',
    message: `Generation ${generation ?? 0} is not reconciled yet`,
  };
}

const timestamp = (now: Date) => now.toISOString().replace(/\.\d{3}Z$/, 'Z');

/**
 * The status to write: `status` with `observedGeneration` set to the subject's generation and
 * the conditions' Reconciling/Stalled replaced by what they call for now (lastTransitionTime kept
 * while the condition stays True, as metav1.Condition does). Every other condition, well-formed
 * or not, is kept as it is and where it is.
 */
export function withKstatus(
  subject: KstatusSubject,
  status: Record<string, unknown>,
  stalls: StallRule = catalogueStall,
  now: Date = new Date(),
): Record<string, unknown> {
  const raw = Array.isArray(status.conditions) ? (status.conditions as unknown[]) : [];
  const isDerived = (item: unknown) =>
    typeof item === 'object' && item !== null && derivedTypes.has(String((item as { type?: unknown }).type));
  const previous = raw.filter(isDerived).flatMap((item) => {
    const parsed = conditionSchema.safeParse(item);
    return parsed.success ? [parsed.data] : [];
  });
  const kept = raw.filter((item) => !isDerived(item));
  const parsed = kept.flatMap((item) => {
    const result = conditionSchema.safeParse(item);
    return result.success ? [result.data] : [];
  });
  const verdict = kstatusVerdict(subject, parsed, stalls);
  const generation = subject.metadata.generation;
  const conditions: unknown[] = [...kept];
  if (verdict) {
    const before = previous.find((c) => c.type === verdict.type);
    conditions.push({
      type: verdict.type,
      status: 'True',
      reason: verdict.reason,
      message: verdict.message,
      lastTransitionTime:
        before?.status === 'True' && before.lastTransitionTime ? before.lastTransitionTime : timestamp(now),
      ...(generation === undefined ? {} : { observedGeneration: generation }),
    });
  }
  return {
    ...status,
    ...(generation === undefined ? {} : { observedGeneration: generation }),
    conditions,
  };
}
