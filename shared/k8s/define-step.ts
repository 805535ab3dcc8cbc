import type { CloudEvent } from 'cloudevents';
import type { QueueWait } from '../server/object-queue.js';
import type { FunctionContext, HandlerResult } from '../server/types.js';
import { kubeClients, type KubeClients } from './clients.js';
import { isCurrent, type GenerationRef } from './condition-writer.js';
import { isTrueFor, conditionsOf } from './conditions.js';
import { getCustomObject, type StatusTarget } from './custom-objects.js';
import { pauseGate } from './paused.js';
import { withRetryingCondition } from './retrying-condition.js';
import { fieldManagerFor } from './status-apply.js';
import { causeOf, recordedBy, replyIdFor, type StepCause } from './step-causes.js';
import type { StoredObject } from './stored-object.js';

/**
 * One step of the chain, written once (issue 26, in the spirit of Metal3's state handlers): the
 * prologue every step shares lives here and nowhere else, the step itself only says what it acts
 * on and what it does. For each event the prologue
 * 0. drops the echo of a write its own step made (own-writes.ts), before any read;
 * 1. reads the object the event points at, once (the step acts on that read: no second GET), or
 *    takes it from the server's watch when that holds it at the version the event shows;
 * 2. drops the event when it names another uid or generation (stale: the newer one has its own);
 * 3. calls the pause gate (shared/k8s/paused.ts), which records a pause or a resume;
 * 4. looks whether the step is done for the live generation: then the event that did it,
 *    delivered again, gets the same reply (shared/k8s/step-causes.ts), any other event nothing;
 * 5. runs the step, recording a transient fault as `<condition>=Unknown` (retrying-condition.ts).
 * Event data is a pointer here: it names the object, never a fact to act on.
 */

/** What a step's code gets: the function's context, its clients, and the event's cause. */
export interface StepRun<Config> {
  context: FunctionContext<Config>;
  clients: KubeClients;
  /** The event being handled (source + id), recorded with the step's success. */
  cause: StepCause | undefined;
}

/** The object an event points at; `ref` when the event names a generation of it. */
export interface StepPointer {
  target: StatusTarget;
  ref?: GenerationRef;
  /**
   * The object's version as the event shows it (a resource event's data): a hint that may only
   * skip. An event at a version this server's own step wrote is an echo and ends before any read
   * (own-writes.ts). The object at exactly this version may come from the server's watch instead
   * of a read (watched-objects.ts): what the API server stored then, not the event's copy.
   * Absent: the event is always read through.
   */
  shown?: { uid: string; resourceVersion: string };
}

/** Why the prologue ended an event without running the step (logged; the reply is `reply`). */
export type StepVerdict =
  | { kind: 'gone' }
  | { kind: 'stale' }
  | { kind: 'deleting' }
  | { kind: 'paused'; reply?: CloudEvent<unknown> }
  | { kind: 'done'; reply?: CloudEvent<unknown> }
  | { kind: 'ran'; reply: HandlerResult };

export interface StepDefinition<Config, Data> {
  /** The condition the step sets (HostsResolved, InventoryRendered, JobLaunched). */
  condition: string;
  /**
   * The object (and the generation) the event points at; undefined: not for this step. The event
   * is there for its attributes (a chain event's `resourceversion`: provisioningPointer).
   */
  read: (data: Data, context: FunctionContext<Config>, event: CloudEvent<unknown>) => StepPointer | undefined;
  /**
   * A Provisioning being deleted: `act` (the step runs as usual), `skip` before the pause gate,
   * or `skip-after-gate` (the gate records a pause first). Each as the step did before issue 26.
   */
  deleting: 'act' | 'skip' | 'skip-after-gate';
  /** Done for the live generation (nothing to do). Default: the condition is True for it. */
  done?: (live: StoredObject) => boolean;
  /**
   * A done step's reply, rebuilt from the API (chain-replies.ts) for the event that did it,
   * delivered again. Absent: such a redelivery gets nothing, as any other event.
   */
  replyAgain?: (
    run: StepRun<Config>,
    live: StoredObject,
    id: string | undefined,
  ) => Promise<CloudEvent<unknown> | undefined> | CloudEvent<unknown> | undefined;
  /** The resume's re-drive (pauseGate's onResume). */
  onResume?: (run: StepRun<Config>) => (fresh: StoredObject) => Promise<CloudEvent<unknown> | undefined>;
  /** The step: the live object is current, not paused, and the step not done for it. */
  run: (run: StepRun<Config>, live: StoredObject, data: Data) => Promise<HandlerResult>;
}

/** Logged when a delivery waited in the per-object queue (at info from a second on). */
export const waitedLine = 'waited for the deliveries before it for the same object';

/** Logged when the prologue drops the echo of its own step's write. */
export const echoLine =
  'the event shows a version this function wrote in a step that ended: an echo, skipped';

/** The event handler of a step (for `on(schema, handler)`). */
export function defineStep<Config, Data>(step: StepDefinition<Config, Data>) {
  return async (
    context: FunctionContext<Config>,
    data: Data,
    event: CloudEvent<unknown>,
  ): Promise<HandlerResult> => {
    // Before any client is made: an event the step skips from its data costs nothing.
    const pointer = step.read(data, context, event);
    if (!pointer) return undefined;
    const { resource, namespace, name } = pointer.target;
    const key = `${resource.group}/${resource.plural}/${namespace}/${name}`;
    const handle = async ({ waitedMs, gaveUp }: QueueWait): Promise<HandlerResult> => {
      const object = `${namespace}/${name}`;
      if (gaveUp)
        context.log.warn('a delivery for the same object is still running: this one runs beside it', {
          object,
          waitedMs,
        });
      // A second or more is worth a line at info: a slow step held its object's next events.
      else if (waitedMs >= 1000) context.log.info(waitedLine, { object, waitedMs });
      else if (waitedMs > 0) context.log.debug(waitedLine, { object, waitedMs });
      const { shown } = pointer;
      if (shown && context.ownWrites?.wrote(shown.uid, shown.resourceVersion)) {
        context.log.debug(echoLine, { object, resourceVersion: shown.resourceVersion });
        return undefined;
      }
      const once = () => handleEvent(step, context, pointer, data, event);
      return context.ownWrites ? context.ownWrites.recording(once) : once();
    };
    return context.queue ? context.queue.run(key, handle) : handle({ waitedMs: 0, gaveUp: false });
  };
}

async function handleEvent<Config, Data>(
  step: StepDefinition<Config, Data>,
  context: FunctionContext<Config>,
  pointer: StepPointer,
  data: Data,
  event: CloudEvent<unknown>,
): Promise<HandlerResult> {
  const run: StepRun<Config> = { context, clients: kubeClients(context.kubeConfig), cause: causeOf(event) };
  const verdict = pointer.ref
    ? // The event names the generation: a fault anywhere is recorded for it.
      await withRetryingCondition(
        run.clients,
        pointer.target,
        pointer.ref,
        step.condition,
        fieldManagerFor(context.functionName),
        context.log,
        () => prologue(step, run, pointer, data),
      )
    : await prologue(step, run, pointer, data);
  if (verdict.kind !== 'ran' && verdict.kind !== 'done')
    context.log.info(`step ${step.condition} not run: ${verdict.kind}`, {
      object: `${pointer.target.namespace}/${pointer.target.name}`,
    });
  return 'reply' in verdict ? verdict.reply : undefined;
}

async function prologue<Config, Data>(
  step: StepDefinition<Config, Data>,
  run: StepRun<Config>,
  pointer: StepPointer,
  data: Data,
): Promise<StepVerdict> {
  const { context, clients, cause } = run;
  // The object at the version the event shows, from the server's watch when it holds exactly
  // that version (the API server's own object, shared/k8s/watched-objects.ts); else one read.
  const watched = pointer.shown && context.watched?.at(pointer.target, pointer.shown);
  const live = watched || (await getCustomObject(clients, pointer.target));
  if (!live) return { kind: 'gone' };
  if (pointer.ref && !isCurrent(live, pointer.ref)) return { kind: 'stale' };
  const deleting = live.metadata.deletionTimestamp !== undefined && live.metadata.deletionTimestamp !== null;
  if (deleting && step.deleting === 'skip') return { kind: 'deleting' };
  const gate = await pauseGate(clients, live, {
    component: context.functionName,
    log: context.log,
    ...(step.onResume ? { onResume: step.onResume(run) } : {}),
  });
  if (gate.stop) return { kind: 'paused', ...(gate.reply ? { reply: gate.reply } : {}) };
  // After a recorded resume, the object as stored then.
  const current = gate.object;
  if (deleting && step.deleting === 'skip-after-gate') return { kind: 'deleting' };
  const generation = current.metadata.generation ?? 0;
  const done = step.done ? step.done(current) : isTrueFor(conditionsOf(current), step.condition, generation);
  if (done) {
    if (step.replyAgain && recordedBy(current.status, step.condition, cause)) {
      context.log.info(`${step.condition} done by this same event: its reply is sent again`, { generation });
      const reply = await step.replyAgain(run, current, replyIdFor(step.condition, cause));
      return { kind: 'done', ...(reply ? { reply } : {}) };
    }
    context.log.debug(`${step.condition} already done for this generation`, { generation });
    return { kind: 'done' };
  }
  const act = () => step.run(run, current, data);
  // A resource event names no generation: a fault in the step is recorded for the live one.
  const reply = pointer.ref
    ? await act()
    : await withRetryingCondition(
        clients,
        pointer.target,
        { uid: current.metadata.uid, generation },
        step.condition,
        fieldManagerFor(context.functionName),
        context.log,
        act,
      );
  return { kind: 'ran', reply };
}
