import type { Condition } from '../schemas/kube.js';
import type { KubeClients } from './clients.js';
import { conditionsOf, type ConditionUpdate } from './conditions.js';
import type { StatusTarget } from './custom-objects.js';
import { applyStatusDecided } from './status-apply.js';
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

/** Who applies, on which read, and map fields merged by key. */
export interface ApplyBase {
  /** Field manager (status-apply.ts fieldManagerFor): one per writer. */
  manager: string;
  /** The object the step read: the apply's base and its resourceVersion precondition. Absent: read first. */
  live?: StoredObject;
  /** Map fields merged key by key (status-apply.ts StatusApply.merge), a function of the fresh object. */
  merge?: (fresh: StoredObject) => Record<string, Record<string, unknown>>;
}

/** One condition apply: for which generation, what, and who writes it on which read. */
export interface ConditionApply extends ConditionChange, ApplyBase {
  ref: GenerationRef;
}

/**
 * Sets conditions (and other status fields) for one generation of an object, by server-side
 * apply as `apply.manager` (status-apply.ts applyStatusDecided): decided on the object the step
 * read (or a fresh read), so a 409 (someone wrote since that read) reads again and decides again.
 * Nothing is written when the object moved to another generation or when `alreadyDone` says the
 * work is recorded.
 */
export async function applyConditions(
  clients: KubeClients,
  target: StatusTarget,
  apply: ConditionApply,
  now: () => Date = () => new Date(),
  maxAttempts = 5,
): Promise<ConditionWriteResult> {
  const { ref } = apply;
  let verdict: 'stale' | 'already-done' = 'already-done';
  const result = await applyStatusDecided(
    clients,
    target,
    apply.manager,
    (fresh) => {
      if (!isCurrent(fresh, ref)) {
        verdict = 'stale';
        return undefined;
      }
      verdict = 'already-done';
      if (apply.alreadyDone?.(conditionsOf(fresh), fresh)) return undefined;
      const fields = typeof apply.fields === 'function' ? apply.fields(fresh) : apply.fields;
      return {
        conditions: apply.conditions.map((update) => ({ ...update, observedGeneration: ref.generation })),
        ...(fields ? { fields } : {}),
        ...(apply.merge ? { merge: apply.merge(fresh) } : {}),
      };
    },
    { ...(apply.live ? { first: apply.live } : {}), maxAttempts, now },
  );
  if (result.outcome === 'unchanged') return { outcome: verdict, object: result.object };
  return result;
}
