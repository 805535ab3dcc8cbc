/**
 * How `bpa demo` runs a step: each has a budget, and any failure in it becomes a StepFailure
 * that names the step (the demo never throws; its result names the step that failed).
 */
import { describeError } from '../../shared/errors.js';
import type { Condition } from '../../shared/schemas/kube.js';
import type { FollowedObject } from './follow-conditions.js';

/** The demo's numbered steps: cluster, lab, engine, Provisioning, Software, summary. */
export const totalSteps = 6;

/** A demo step that failed: `step` says which, in words. */
export class StepFailure extends Error {
  constructor(
    readonly step: string,
    message: string,
  ) {
    super(message);
  }
}

/** `work`, failing as `step` when it throws or takes longer than `timeoutMs`. */
export async function withTimeout<T>(step: string, timeoutMs: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new StepFailure(step, `did not finish within ${Math.round(timeoutMs / 1000)} s`)),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([work, timeout]);
  } catch (error) {
    if (error instanceof StepFailure) throw error;
    throw new StepFailure(step, describeError(error).message);
  } finally {
    clearTimeout(timer);
  }
}

/** Whether `type` is True on `object` for its current generation. */
export const conditionTrue = (object: FollowedObject, type: string) =>
  object.status?.conditions?.some((c) => c.type === type && c.status === 'True' && observed(c, object)) ??
  false;
/** Whether `condition` speaks of `object`'s current generation (or of no generation). */
export const observed = (condition: Condition, object: FollowedObject) =>
  condition.observedGeneration === undefined || condition.observedGeneration === object.metadata?.generation;
