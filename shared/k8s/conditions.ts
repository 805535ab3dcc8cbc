import { z } from 'zod';
import { conditionSchema, type Condition } from '../schemas/kube.js';
import type { StoredObject } from './stored-object.js';

export type ConditionStatus = Condition['status'];

const conditionListSchema = z.array(z.unknown());

/** The well-formed conditions of an object's status (anything malformed is dropped). */
export function conditionsOf(object: StoredObject | undefined): Condition[] {
  const raw = conditionListSchema.safeParse(object?.status?.conditions);
  if (!raw.success) return [];
  return raw.data.flatMap((item) => {
    const parsed = conditionSchema.safeParse(item);
    return parsed.success ? [parsed.data] : [];
  });
}

/** What a caller states about a condition; lastTransitionTime is computed. */
export interface ConditionUpdate {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
  observedGeneration?: number;
}

/**
 * Returns a new list with the condition set. lastTransitionTime only moves when the status
 * changes (metav1.Condition semantics); the order of the other conditions is kept.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  update: ConditionUpdate,
  now: Date = new Date(),
): Condition[] {
  const list = [...(conditions ?? [])];
  const index = list.findIndex((c) => c.type === update.type);
  const previous = index >= 0 ? list[index] : undefined;
  const lastTransitionTime =
    previous && previous.status === update.status && previous.lastTransitionTime
      ? previous.lastTransitionTime
      : now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  const next: Condition = {
    type: update.type,
    status: update.status,
    reason: update.reason,
    message: update.message,
    lastTransitionTime,
    ...(update.observedGeneration === undefined ? {} : { observedGeneration: update.observedGeneration }),
  };
  if (index >= 0) list[index] = next;
  else list.push(next);
  return list;
}

export function findCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** The condition of that type, only when it was written for this generation. */
export function conditionFor(
  conditions: readonly Condition[] | undefined,
  type: string,
  generation: number,
): Condition | undefined {
  const condition = findCondition(conditions, type);
  return condition && condition.observedGeneration === generation ? condition : undefined;
}

export const isTrueFor = (conditions: readonly Condition[] | undefined, type: string, generation: number) =>
  conditionFor(conditions, type, generation)?.status === 'True';

/** True when the condition has the same status, reason and message (nothing to write). */
export function sameCondition(a: Condition | undefined, b: ConditionUpdate): boolean {
  return (
    !!a &&
    a.status === b.status &&
    a.reason === b.reason &&
    a.message === b.message &&
    a.observedGeneration === b.observedGeneration
  );
}
