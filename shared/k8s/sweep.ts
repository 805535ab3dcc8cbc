import type { KubeConfig } from '@kubernetes/client-node';
import type { CloudEvent } from 'cloudevents';
import { describeError, transient } from '../errors.js';
import type { Logger } from '../log.js';
import { kubeClients, type KubeClients } from './clients.js';
import { listInNamespaces } from './custom-objects.js';
import type { CustomResource } from './resources.js';
import type { StoredObject } from './stored-object.js';

/** What a sweep needs from the function's context (FunctionContext has all of it). */
export interface SweepContext {
  kubeConfig: KubeConfig;
  /** Namespaces the sweep looks at; empty: all namespaces. */
  config: { SWEEP_NAMESPACES: readonly string[] };
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
 * The periodic sweep (a PingSource event): the source drops events and never replays, so
 * every object that still needs work gets it done again, and the resulting event is sent to
 * the broker. Handlers are idempotent, so a re-drive that races the original is harmless.
 * One object failing does not stop the others; the ping fails (and is retried) at the end,
 * naming every object that could not be handled.
 */
export async function runSweep(context: SweepContext, sweep: Sweep): Promise<void> {
  const clients = kubeClients(context.kubeConfig);
  const listed = await listInNamespaces(clients, sweep.resource, context.config.SWEEP_NAMESPACES);
  const items = sweep.select ? listed.filter(sweep.select) : listed;
  const failed: string[] = [];
  let sent = 0;
  for (const item of items) {
    const where = `${item.metadata.namespace}/${item.metadata.name}`;
    try {
      const event = await sweep.redrive(item, clients);
      if (!event) continue;
      await context.send(event);
      sent++;
    } catch (error) {
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
