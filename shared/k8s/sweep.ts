import type { KubeConfig } from '@kubernetes/client-node';
import type { CloudEvent } from 'cloudevents';
import { envInt } from '../config.js';
import { describeError, transient } from '../errors.js';
import { pingDataSchema } from '../events/types.js';
import type { Logger } from '../log.js';
import { on, type FunctionContext } from '../server/types.js';
import { notOnboardedIn, onboardCommand, terminatingIn } from './api-errors.js';
import { kubeClients, type KubeClients } from './clients.js';
import { listInNamespaces } from './custom-objects.js';
import { pauseGate } from './paused.js';
import type { CustomResource } from './resources.js';
import type { StoredObject } from './stored-object.js';

/**
 * SWEEP_INTERVAL_SECONDS: the least time between two sweeps of one function instance (contract
 * section 12, "Events cost bounded work"). The manifests' PingSource fires once a minute; a ping
 * that comes sooner after the last sweep began (a flood of forged pings, a broker's retries) is
 * answered without listing anything. Below the schedule, so that every scheduled ping sweeps
 * even when delivery jitters. 0: every ping sweeps (tests that drive sweeps one by one).
 */
export const sweepIntervalEnv = envInt(30, { min: 0 });

/** What a sweep needs from the function's context (FunctionContext has all of it). */
export interface SweepContext {
  /** The function sweeping: with kubeConfig, what names the instance (takeSweepSlot). */
  functionName?: string;
  kubeConfig: KubeConfig;
  /** Namespaces the sweep looks at; empty: all namespaces. SWEEP_INTERVAL_SECONDS: sweepIntervalEnv. */
  config: { SWEEP_NAMESPACES: readonly string[]; SWEEP_INTERVAL_SECONDS?: number };
  send(event: CloudEvent<unknown>): Promise<void>;
  log: Logger;
}

export interface Sweep {
  /** What is swept (Provisionings, Softwares). */
  resource: CustomResource;
  /** Its kind, for logs and the error message. */
  kind: string;
  /** Which listed objects need work; default all of them. */
  select?: (item: StoredObject) => boolean;
  /** Does the work for one object; the event it returns is sent to the broker. */
  redrive: (item: StoredObject, clients: KubeClients) => Promise<CloudEvent<unknown> | undefined>;
}

/**
 * When each function instance last began a sweep of each kind. Keyed by the instance's
 * KubeConfig (one per function server) and the function's name and the kind (several functions
 * may share a process and a KubeConfig in the embedded stack and in tests).
 */
const lastSweeps = new WeakMap<KubeConfig, Map<string, number>>();

/**
 * Takes the sweep slot of this instance for `kind` when the interval has passed since the last
 * one began (and records now), else returns the seconds left. Taken before any await, so pings
 * that arrive together cannot all pass: one sweeps, the others are answered at once.
 */
export function takeSweepSlot(
  kubeConfig: KubeConfig,
  /** `<function>/<kind>`: what is swept, by whom. */
  kind: string,
  intervalSeconds: number,
  now = Date.now(),
): { taken: true } | { taken: false; secondsLeft: number } {
  const byKind = lastSweeps.get(kubeConfig) ?? new Map<string, number>();
  lastSweeps.set(kubeConfig, byKind);
  const last = byKind.get(kind);
  const intervalMs = intervalSeconds * 1000;
  if (last !== undefined && intervalMs > 0 && now - last < intervalMs)
    return { taken: false, secondsLeft: Math.ceil((intervalMs - (now - last)) / 1000) };
  byKind.set(kind, now);
  return { taken: true };
}

/**
 * The periodic sweep (a PingSource event): the source drops events and never replays, so
 * every object that still needs work gets it done again, and the resulting event is sent to
 * the broker. Handlers are idempotent, so a re-drive that races the original is harmless.
 * One object failing does not stop the others; the ping fails (and is retried) at the end,
 * naming every object that could not be handled. At most one sweep per SWEEP_INTERVAL_SECONDS
 * per function instance (takeSweepSlot): the rest of a flood costs no API call. A paused object
 * (shared/k8s/paused.ts) is not re-driven, whatever the function's sweep would do with it.
 */
export async function runSweep(context: SweepContext, sweep: Sweep): Promise<void> {
  const slot = takeSweepSlot(
    context.kubeConfig,
    `${context.functionName ?? ''}/${sweep.kind}`,
    context.config.SWEEP_INTERVAL_SECONDS ?? 30,
  );
  if (!slot.taken) {
    context.log.debug('sweep skipped: the last one began less than SWEEP_INTERVAL_SECONDS ago', {
      kind: sweep.kind,
      secondsLeft: slot.secondsLeft,
    });
    return;
  }
  const clients = kubeClients(context.kubeConfig);
  const listed = await listInNamespaces(clients, sweep.resource, context.config.SWEEP_NAMESPACES);
  const items = sweep.select ? listed.filter(sweep.select) : listed;
  const failed: string[] = [];
  const notOnboarded = new Set<string>();
  let sent = 0;
  for (const item of items) {
    const where = `${item.metadata.namespace}/${item.metadata.name}`;
    try {
      // The pause (shared/k8s/paused.ts), decided from the listed object as every sweep reads it.
      const gate = await pauseGate(clients, item, {
        component: context.functionName ?? sweep.kind,
        log: context.log,
        resource: sweep.resource,
      });
      if (gate.stop) continue;
      const event = await sweep.redrive(gate.object, clients);
      if (!event) continue;
      await context.send(event);
      sent++;
    } catch (error) {
      // Not onboarded: nothing was written and nothing will be until an operator onboards it;
      // said once per sweep per namespace, not retried as a failure.
      const namespace = notOnboardedIn(error);
      if (namespace !== undefined) {
        if (!notOnboarded.has(namespace))
          context.log.warn('namespace not onboarded', {
            kind: sweep.kind,
            namespace,
            command: onboardCommand(namespace),
          });
        notOnboarded.add(namespace);
        continue;
      }
      // Being deleted: what the step would create there goes with the namespace, and the object's
      // own deletion (its finalizer) is re-driven once the namespace controller has marked it.
      const terminating = terminatingIn(error);
      if (terminating !== undefined) {
        context.log.info('namespace being deleted: nothing written there', {
          kind: sweep.kind,
          object: where,
        });
        continue;
      }
      failed.push(where);
      context.log.warn('sweep could not re-drive an object', {
        kind: sweep.kind,
        object: where,
        error: describeError(error).message,
      });
    }
  }
  context.log.info('sweep done', {
    kind: sweep.kind,
    listed: listed.length,
    selected: items.length,
    sent,
    failed: failed.length,
  });
  if (failed.length > 0)
    throw transient(
      'SweepIncomplete',
      `The sweep could not re-drive ${failed.length} ${sweep.kind}(s): ${failed.join(', ')}`,
    );
}

/**
 * The handler of the ping (the PingSource's tick, contract section 12) in every function that
 * sweeps: its sweep, and no reply (what a sweep re-drives, it sends itself).
 */
export function sweepOnPing<Config>(sweep: (context: FunctionContext<Config>) => Promise<void>) {
  return on(pingDataSchema, async (context: FunctionContext<Config>) => {
    await sweep(context);
    return undefined;
  });
}
