import type { CloudEvent } from 'cloudevents';
import { pausedAnnotation } from '../core/lifecycle-names.js';
import type { Logger } from '../log.js';
import { Reason } from '../reasons.js';
import type { KubeClients } from './clients.js';
import { applyConditions } from './condition-writer.js';
import { conditionsOf, findCondition } from './conditions.js';
import { recordEvent } from './events.js';
import { provisioningsResource, softwaresResource, type CustomResource } from './resources.js';
import { identityOf, type StoredObject } from './stored-object.js';
import { fieldManagerFor } from './status-apply.js';

/**
 * The pause (contract section 14): `bpa.akraino.org/paused`, whatever its value, on a
 * Provisioning or a Software stops every action of every function on it until it is removed, as
 * Cluster API's `cluster.x-k8s.io/paused` and Metal3's `baremetalhost.metal3.io/paused` do. This
 * is the one gate: every entry point that acts on a Provisioning or a Software calls `pauseGate`
 * right after reading the live object (the four chain handlers, each function's sweep through
 * shared/k8s/sweep.ts, and the Software's one step, installSoftware). What it covers, by where
 * it is called: host claims and resolution, inventory, the KUD Job launch, a Job's progress and
 * completion, the kubeconfig publisher, the deletion cleanup (as in Cluster API, a paused object
 * being deleted keeps its finalizer until the annotation is removed), install Jobs. A Job already
 * running is not killed; what it ends with is acted on after the resume. Decided from the live
 * object's annotations only: an event is a pointer, never the fact.
 *
 * Status says so: the condition `Paused` True (reason Paused, message naming the annotation)
 * while paused, `Paused` False (reason Resumed) once it is removed; `Ready` is left as it was,
 * and kstatus reads a paused object that is not Ready as InProgress, never Failed
 * (shared/core/kstatus.ts). One Event `Paused` or `Resumed` per transition: only the write that
 * turned the condition over sends it.
 */
export const PausedCondition = 'Paused';

export const pausedMessage = `Paused by the annotation ${pausedAnnotation}: no function acts on this object until it is removed`;
export const resumedMessage = `The annotation ${pausedAnnotation} was removed: the functions act on this object again`;

/** True when the object carries the pause annotation (any value, even empty). */
export const isPaused = (object: Pick<StoredObject, 'metadata'>): boolean =>
  object.metadata.annotations?.[pausedAnnotation] !== undefined;

/**
 * What the gate does for a live object (pure):
 * - pause: paused, and status does not say so for this generation yet: write Paused True, stop;
 * - paused: paused and status says so: stop, write nothing;
 * - resume: not paused, status still says Paused True: write Paused False (Resumed), go on;
 * - go: neither; nothing to write.
 */
export type PauseTransition = 'pause' | 'paused' | 'resume' | 'go';

export function pauseTransition(live: StoredObject): PauseTransition {
  const recorded = findCondition(conditionsOf(live), PausedCondition);
  const recordedTrue = recorded?.status === 'True';
  if (isPaused(live))
    return recordedTrue && recorded.observedGeneration === (live.metadata.generation ?? 0)
      ? 'paused'
      : 'pause';
  return recordedTrue ? 'resume' : 'go';
}

/**
 * When a wait that began at `since` started counting again: the later of `since` and the last
 * resume (Paused False's lastTransitionTime). A deadline counted from an object's deletion (the
 * cleanup's) must not run out while the object was paused and nothing was allowed to act.
 */
export function unpausedSince(object: StoredObject, since: unknown): Date | undefined {
  const start = typeof since === 'string' || since instanceof Date ? new Date(since) : undefined;
  const recorded = findCondition(conditionsOf(object), PausedCondition);
  const resumed =
    recorded?.status === 'False' && recorded.lastTransitionTime
      ? new Date(recorded.lastTransitionTime)
      : undefined;
  if (!start || Number.isNaN(start.getTime())) return resumed;
  return resumed && resumed.getTime() > start.getTime() ? resumed : start;
}

/**
 * For a filter that skips an update event as the echo of a status write by looking at the event's
 * data (issue 26: a hint may only make a function skip work): an object whose annotation and
 * `Paused` condition disagree carries a pause or a resume not recorded yet, so its event is never
 * an echo. Adding or removing the annotation changes neither the generation nor the labels.
 */
export function awaitsPauseTransition(object: StoredObject): boolean {
  const transition = pauseTransition(object);
  return transition === 'pause' || transition === 'resume';
}

export interface PauseGateOptions {
  /** The function reporting (the Event's component). */
  component: string;
  log?: Logger;
  /** What the object is; default from its kind (Software, else Provisioning). */
  resource?: CustomResource;
  /**
   * Called once, by the call that recorded the resume, with the object as stored after it: the
   * event that re-drives the chain now rather than at the next sweep (undefined: go on).
   */
  onResume?: (fresh: StoredObject) => Promise<CloudEvent<unknown> | undefined>;
}

export type PauseGateResult =
  /** Paused (or the resume's re-drive answered): the caller returns `reply` and does nothing else. */
  | { stop: true; reply?: CloudEvent<unknown> }
  /** Not paused: go on with `object` (the stored object after a resume was recorded, else `live`). */
  | { stop: false; object: StoredObject };

/** The gate every entry point calls right after reading the live object (see above). */
export async function pauseGate(
  clients: KubeClients,
  live: StoredObject,
  options: PauseGateOptions,
): Promise<PauseGateResult> {
  const transition = pauseTransition(live);
  const where = `${live.metadata.namespace}/${live.metadata.name}`;
  if (transition === 'go') return { stop: false, object: live };
  if (transition === 'paused') {
    options.log?.debug('paused: nothing is done', { object: where, annotation: pausedAnnotation });
    return { stop: true };
  }
  const pausing = transition === 'pause';
  const resource = options.resource ?? (live.kind === 'Software' ? softwaresResource : provisioningsResource);
  const target = { resource, namespace: live.metadata.namespace ?? '', name: live.metadata.name };
  const generation = live.metadata.generation ?? 0;
  // The Event goes with the write that turned the condition over: a Paused condition rewritten
  // for a new generation (the spec changed while paused) is no new transition.
  let turned = false;
  // Applied as the reporting function's manager on the object just read (no second read).
  const result = await applyConditions(clients, target, {
    ref: { uid: live.metadata.uid, generation },
    conditions: [
      pausing
        ? { type: PausedCondition, status: 'True', reason: Reason.Paused, message: pausedMessage }
        : { type: PausedCondition, status: 'False', reason: Reason.Resumed, message: resumedMessage },
    ],
    alreadyDone: (conditions, fresh) => {
      turned = false;
      const recorded = findCondition(conditions, PausedCondition);
      // Decided again on the fresh object: the annotation may have moved since `live`.
      if (isPaused(fresh) !== pausing) return true;
      turned = (recorded?.status === 'True') !== pausing;
      return pausing
        ? recorded?.status === 'True' && recorded.observedGeneration === generation
        : recorded?.status !== 'True';
    },
    manager: fieldManagerFor(options.component),
    live,
  });
  if (result.outcome === 'written' && turned) {
    options.log?.info(pausing ? 'paused' : 'resumed', { object: where, annotation: pausedAnnotation });
    await recordEvent(
      clients,
      {
        object: identityOf(result.object),
        type: 'Normal',
        reason: pausing ? Reason.Paused : Reason.Resumed,
        message: pausing ? pausedMessage : resumedMessage,
        component: options.component,
      },
      options.log,
    );
  }
  if (pausing) return { stop: true };
  if (result.outcome === 'gone') return { stop: true };
  const fresh = result.object;
  // Paused again in between: the fresh object decides.
  if (isPaused(fresh)) return { stop: true };
  if (result.outcome === 'written' && options.onResume) {
    const reply = await options.onResume(fresh);
    if (reply) return { stop: true, reply };
  }
  return { stop: false, object: fresh };
}
