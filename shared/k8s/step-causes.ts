import type { CloudEvent } from 'cloudevents';
import { z } from 'zod';
import { sha256Hex } from '../core/hash.js';

/**
 * Idempotent replies. The broker delivers at least once: a delivery that times out while the
 * function still works (a loaded machine) is delivered again, and the retry finds the step
 * already done. Replying nothing then loses the chain's next event (the step's reply went to
 * the timed-out request) until the sweep. So a step records which event did it (its CloudEvent
 * source and id, `status.stepCauses.<condition>`), and the same event delivered again gets the
 * same reply, rebuilt from the API, with the same id (derived from the cause): downstream, a
 * redelivery stays a redelivery. Any other event that finds the step done (the echo of a status
 * write, a duplicate from another source) still gets nothing, so echoes never fan out.
 */
export const stepCausesField = 'stepCauses';

/** The CloudEvent that caused a step: its identity is source + id (CloudEvents 1.0). */
export const stepCauseSchema = z.object({ source: z.string().min(1), id: z.string().min(1) });
export type StepCause = z.infer<typeof stepCauseSchema>;

const stepCausesSchema = z.record(z.string(), z.unknown());

/** The cause of an incoming event; undefined for one without an id or source. */
export function causeOf(
  event: Pick<CloudEvent<unknown>, 'source' | 'id'> | undefined,
): StepCause | undefined {
  if (!event?.source || !event.id) return undefined;
  return { source: event.source, id: event.id };
}

/** The recorded causes, well-formed ones only (anything else is dropped). */
function causesOf(status: Record<string, unknown> | undefined): Record<string, StepCause> {
  const raw = stepCausesSchema.safeParse(status?.[stepCausesField]);
  if (!raw.success) return {};
  const causes: Record<string, StepCause> = {};
  for (const [step, value] of Object.entries(raw.data)) {
    const cause = stepCauseSchema.safeParse(value);
    if (cause.success) causes[step] = cause.data;
  }
  return causes;
}

/** True when `step` was recorded by exactly this event (a redelivery of the event that did it). */
export function recordedBy(
  status: Record<string, unknown> | undefined,
  step: string,
  cause: StepCause | undefined,
): boolean {
  if (!cause) return false;
  const recorded = causesOf(status)[step];
  return recorded?.source === cause.source && recorded.id === cause.id;
}

/**
 * The id of the reply `step` gives to `cause`: the same for every delivery of that event, so a
 * repeated reply is the same CloudEvent (source + id) as the first. Undefined: a fresh id.
 */
export function replyIdFor(step: string, cause: StepCause | undefined): string | undefined {
  if (!cause) return undefined;
  const hex = sha256Hex(`${cause.source}\n${cause.id}\n${step}`);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}
