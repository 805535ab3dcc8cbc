import { describeError, httpStatusFor } from '../errors.js';
import type { Logger } from '../log.js';
import type { KubeClients } from './clients.js';
import { applyConditions, type GenerationRef } from './condition-writer.js';
import type { StatusTarget } from './custom-objects.js';

/**
 * A fault the handler answers 5xx for (an API hiccup, 503; an API refusal such as RBAC's 403 or a
 * bug, 500) makes the broker retry. If the retries run out the event only reaches the
 * dead-letter sink, so the resource's status must already say what is failing: this records
 * `<type>=Unknown` with the fault's reason, best effort (the same fault may stop the write too),
 * for this generation. An Unknown condition never counts as "handled": the retry and the sweep
 * still do the step, so a Role the operator adds later is picked up by the next sweep.
 */
export async function recordRetrying(
  clients: KubeClients,
  target: StatusTarget,
  ref: GenerationRef,
  conditionType: string,
  /** The field manager of the write (status-apply.ts fieldManagerFor). */
  manager: string,
  error: unknown,
  log: Logger,
): Promise<void> {
  if (httpStatusFor(error) < 500) return;
  const { reason, message } = describeError(error);
  try {
    await applyConditions(clients, target, {
      ref,
      conditions: [
        {
          type: conditionType,
          status: 'Unknown',
          reason,
          message: `${message} (will be retried)`,
        },
      ],
      alreadyDone: (conditions) =>
        conditions.some(
          (c) =>
            c.type === conditionType && c.observedGeneration === ref.generation && c.status !== 'Unknown',
        ),
      manager,
    });
  } catch (writeError) {
    log.warn('could not record the transient failure on status', {
      reason,
      error: describeError(writeError).message,
    });
  }
}

/** Runs a step; if it throws a transient fault, records it on status (above) and rethrows. */
export async function withRetryingCondition<T>(
  clients: KubeClients,
  target: StatusTarget,
  ref: GenerationRef,
  conditionType: string,
  manager: string,
  log: Logger,
  step: () => Promise<T>,
): Promise<T> {
  try {
    return await step();
  } catch (error) {
    await recordRetrying(clients, target, ref, conditionType, manager, error, log);
    throw error;
  }
}
