import type { Logger } from '../log.js';
import type { KubeClients } from './clients.js';
import {
  applyConditions,
  type ConditionChange,
  type ConditionWriteResult,
  type GenerationRef,
} from './condition-writer.js';
import { conditionFor, isTrueFor, type ConditionStatus } from './conditions.js';
import type { StatusTarget } from './custom-objects.js';
import { recordEvent } from './events.js';
import type { ObjectIdentity, StoredObject } from './stored-object.js';
import type { Condition } from '../schemas/kube.js';
import type { ConditionReason, StepReason } from '../reasons.js';
import { stepCausesField, type StepCause } from './step-causes.js';
import { fieldManagerFor } from './status-apply.js';

/**
 * How a step ends, written the same way by every function: the step's condition, the summary
 * `Ready`, and an Event, for one generation of one object. `reportFailure` and `completeStep`
 * are the two endings; the Provisioning and Software wrappers (shared/k8s/provisioning.ts,
 * functions/software-install/software-status.ts) add the chain event.
 */

/** Where a step's ending is written: the object, its Event identity, the generation, the reporter. */
export interface StepTarget {
  target: StatusTarget;
  object: ObjectIdentity;
  ref: GenerationRef;
  /** Reporting function, for the Event. */
  component: string;
  /** Other status fields to write with the conditions (nodes, jobName, hosts...), or a function of the fresh object. */
  fields?: Record<string, unknown> | ((fresh: StoredObject) => Record<string, unknown>);
  /**
   * The object the step read: the base of the ending's server-side apply (status-apply.ts), with
   * no read. Absent: the object is read first.
   */
  live?: StoredObject;
  /**
   * The field manager of the write; default `bpa-<component>`. A writer other than the function
   * itself (the install Job) reports with the function's component but applies as its own manager.
   */
  manager?: string;
}

export interface Failure {
  /** The condition that failed (HostsResolved, JobLaunched, Installed...). */
  step: string;
  /** CamelCase reason from the catalogue (or a caught error's own), also the Event's reason. */
  reason: StepReason;
  /** The human message (the contract's wording where it has one). */
  message: string;
}

export type FailureReport = Failure & StepTarget;

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
  return writeStep(clients, report, 'Warning', log, {
    conditions: [
      { type: step, status: 'False', reason, message },
      { type: 'Ready', status: 'False', reason, message },
    ],
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
}

export interface Success {
  /** The condition that succeeded (HostsResolved, JobLaunched, Installed...). */
  step: string;
  /** CamelCase reason of the step's True condition, also the Normal Event's reason. */
  reason: ConditionReason;
  message: string;
  /**
   * The summary `Ready` after this step: Unknown (reason Provisioning) while the chain goes
   * on, True at its end.
   */
  ready: { status: Exclude<ConditionStatus, 'False'>; reason: ConditionReason; message: string };
  /**
   * Looked at on the fresh object: true means this success is already recorded, so nothing is
   * written and no Event is sent. Default: the step is True for the generation.
   */
  alreadyDone?: (conditions: Condition[], fresh: StoredObject) => boolean;
  /**
   * The event this step answers (shared/k8s/step-causes.ts): recorded in `status.stepCauses`
   * with the success, so a redelivery of it gets the same reply. None (the sweep): the step's
   * entry is dropped.
   */
  cause?: StepCause;
}

export type SuccessReport = Success & StepTarget;

/**
 * The success twin of `reportFailure`: the step's condition True and the summary `Ready` as
 * given, plus a Normal Event with the step's reason and message. Outcome `written` only for
 * the call that recorded it (duplicates and stale events get `already-done`/`stale`/`gone`),
 * so the caller announces a success exactly once.
 */
export async function completeStep(
  clients: KubeClients,
  report: SuccessReport,
  log?: Logger,
): Promise<ConditionWriteResult> {
  const { step, reason, message, ready } = report;
  return writeStep(clients, report, 'Normal', log, {
    conditions: [
      { type: step, status: 'True', reason, message },
      { type: 'Ready', ...ready },
    ],
    alreadyDone: report.alreadyDone ?? ((conditions) => isTrueFor(conditions, step, report.ref.generation)),
  });
}

/** Both endings: the conditions (and fields) for the generation, then the Event when they were written. */
async function writeStep(
  clients: KubeClients,
  report: Omit<StepTarget, 'fields'> & {
    step: string;
    reason: StepReason;
    message: string;
    cause?: StepCause;
    fields?: ConditionChange['fields'];
  },
  eventType: 'Normal' | 'Warning',
  log: Logger | undefined,
  change: Omit<ConditionChange, 'fields'>,
): Promise<ConditionWriteResult> {
  const full = { ...change, fields: report.fields };
  const result = await applyConditions(clients, report.target, {
    ref: report.ref,
    ...full,
    manager: report.manager ?? fieldManagerFor(report.component),
    ...(report.live ? { live: report.live } : {}),
    // The success's cause (completeStep) merged into the manager's own causes (another step's
    // entry is another manager's); none (the sweep) drops the step's entry. A failure leaves the
    // step's cause as it is.
    ...(eventType === 'Normal'
      ? { merge: () => ({ [stepCausesField]: { [report.step]: report.cause } }) }
      : {}),
  });
  if (result.outcome === 'written')
    await recordEvent(
      clients,
      {
        object: report.object,
        type: eventType,
        reason: report.reason,
        message: report.message,
        component: report.component,
      },
      log,
    );
  return result;
}
