import type { Condition } from '../schemas/kube.js';
import type { KubeClients } from './clients.js';
import { conditionsOf, type ConditionUpdate, setCondition } from './conditions.js';
import type { StatusTarget } from './custom-objects.js';
import { updateStatus } from './status-writer.js';
import { applyStatus } from './status-apply.js';
import { getCustomObject } from './custom-objects.js';
import { transient } from '../errors.js';
import type { StoredObject } from './stored-object.js';

/** The object generation a write is about; a write for another uid or generation is stale. */
export interface GenerationRef {
  uid?: string;
  generation: number;
}

export interface ConditionChange {
  /** Conditions to set; observedGeneration is the ref's generation. */
  conditions: Omit<ConditionUpdate, 'observedGeneration'>[];
  /** Other status fields to set (nodes, jobName, hosts...), or a function of the fresh object. */
  fields?: Record<string, unknown> | ((fresh: StoredObject) => Record<string, unknown>);
  /**
   * Looked at on the fresh object: true means the work is already recorded (for example the
   * condition is already True for this generation), so nothing is written.
   */
  alreadyDone?: (conditions: Condition[], fresh: StoredObject) => boolean;
}

export type ConditionWriteResult =
  | { outcome: 'written'; object: StoredObject }
  | { outcome: 'already-done'; object: StoredObject }
  /** The object now has another uid or generation than the ref: the event was stale. */
  | { outcome: 'stale'; object: StoredObject }
  | { outcome: 'gone' };

export const isCurrent = (object: StoredObject, ref: GenerationRef) =>
  (ref.uid === undefined || object.metadata.uid === ref.uid) &&
  (object.metadata.generation ?? 0) === ref.generation;

/**
 * Sets conditions (and other status fields) for one generation of an object, on a fresh read,
 * retrying on conflicts. Nothing is written when the object moved to another generation or
 * when `alreadyDone` says the work is recorded.
 */
export async function writeConditions(
  clients: KubeClients,
  target: StatusTarget,
  ref: GenerationRef,
  change: ConditionChange,
  now: () => Date = () => new Date(),
): Promise<ConditionWriteResult> {
  let verdict: 'stale' | 'already-done' | undefined;
  const result = await updateStatus(clients, target, (fresh) => {
    verdict = undefined;
    if (!isCurrent(fresh, ref)) {
      verdict = 'stale';
      return undefined;
    }
    const current = conditionsOf(fresh);
    if (change.alreadyDone?.(current, fresh)) {
      verdict = 'already-done';
      return undefined;
    }
    let conditions = current;
    for (const update of change.conditions)
      conditions = setCondition(conditions, { ...update, observedGeneration: ref.generation }, now());
    const fields = typeof change.fields === 'function' ? change.fields(fresh) : change.fields;
    return { ...fresh.status, ...fields, conditions };
  });
  if (result.outcome === 'gone') return result;
  if (result.outcome === 'written') return result;
  return { outcome: verdict ?? 'already-done', object: result.object };
}

/** What writeConditions' apply twin needs: who applies, on which read, and map fields merged by key. */
export interface ApplyBase {
  /** Field manager (status-apply.ts fieldManagerFor). */
  manager: string;
  /** The object the step read: the apply's base and its resourceVersion precondition. */
  live: StoredObject;
  /** Map fields merged key by key (status-apply.ts StatusApply.merge), a function of the fresh object. */
  merge?: (fresh: StoredObject) => Record<string, Record<string, unknown>>;
}

/**
 * writeConditions by server-side apply (status-apply.ts): decided on the object the step already
 * read, so no GET; a 409 (someone wrote since that read) reads again and decides again, as the
 * read-modify-write did. Same outcomes as writeConditions.
 */
export async function applyConditions(
  clients: KubeClients,
  target: StatusTarget,
  ref: GenerationRef,
  change: ConditionChange,
  base: ApplyBase,
  now: () => Date = () => new Date(),
  maxAttempts = 5,
): Promise<ConditionWriteResult> {
  // An object without managedFields (trimmed by a cache) cannot say what the manager owns, and
  // an apply without it would drop those fields: read it whole.
  let fresh: StoredObject | undefined = Array.isArray(base.live.metadata.managedFields)
    ? base.live
    : await getCustomObject(clients, target);
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    if (!fresh) return { outcome: 'gone' };
    if (!isCurrent(fresh, ref)) return { outcome: 'stale', object: fresh };
    if (change.alreadyDone?.(conditionsOf(fresh), fresh)) return { outcome: 'already-done', object: fresh };
    const fields = typeof change.fields === 'function' ? change.fields(fresh) : change.fields;
    const result = await applyStatus(
      clients,
      target,
      fresh,
      {
        manager: base.manager,
        conditions: change.conditions.map((update) => ({ ...update, observedGeneration: ref.generation })),
        ...(fields ? { fields } : {}),
        ...(base.merge ? { merge: base.merge(fresh) } : {}),
      },
      now(),
    );
    if (result.outcome !== 'conflict') return result;
    fresh = await getCustomObject(clients, target);
  }
  throw transient(
    'StatusConflict',
    `Could not apply the status of ${target.resource.plural} ${target.namespace}/${target.name}: it kept changing (${maxAttempts} attempts)`,
  );
}
