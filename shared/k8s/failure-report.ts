import type { Logger } from '../log.js';
import type { KubeClients } from './clients.js';
import { type ConditionWriteResult, type GenerationRef, writeConditions } from './condition-writer.js';
import { conditionFor } from './conditions.js';
import type { StatusTarget } from './status-writer.js';
import { recordEvent } from './events.js';
import type { ObjectIdentity } from './stored-object.js';

export interface Failure {
  /** The condition that failed (HostsResolved, JobLaunched, Installed...). */
  step: string;
  /** CamelCase reason, also the Event's reason. */
  reason: string;
  /** The human message (the contract's wording where it has one). */
  message: string;
}

export interface FailureReport extends Failure {
  target: StatusTarget;
  object: ObjectIdentity;
  ref: GenerationRef;
  /** Reporting function, for the Event. */
  component: string;
  /** Other status fields to write with the failure. */
  fields?: Record<string, unknown>;
}

/**
 * Records a failure the way every step does: the step's condition False and the summary
 * `Ready` False with the same reason and message, plus a Warning Event. When exactly this
 * failure is already recorded for the generation, nothing is written (outcome `already-done`),
 * so the caller can skip announcing it again.
 */
export async function reportFailure(
  clients: KubeClients,
  report: FailureReport,
  log?: Logger,
): Promise<ConditionWriteResult> {
  const { step, reason, message } = report;
  const result = await writeConditions(clients, report.target, report.ref, {
    conditions: [
      { type: step, status: 'False', reason, message },
      { type: 'Ready', status: 'False', reason, message },
    ],
    fields: report.fields,
    alreadyDone: (conditions) => {
      const current = conditionFor(conditions, step, report.ref.generation);
      const ready = conditionFor(conditions, 'Ready', report.ref.generation);
      return (
        current?.status === 'False' &&
        current.reason === reason &&
        current.message === message &&
        ready?.status === 'False' &&
        ready.message === message
      );
    },
  });
  if (result.outcome === 'written')
    await recordEvent(
      clients,
      { object: report.object, type: 'Warning', reason, message, component: report.component },
      log,
    );
  return result;
}
