import { createHash } from 'node:crypto';
import type { CoreV1Event } from '@kubernetes/client-node';
import type { KubeClients } from './clients.js';
import type { ObjectIdentity } from './stored-object.js';
import { classifyApiError, isConflict, isNotFound, terminatingIn } from './api-errors.js';
import type { Logger } from '../log.js';
import type { EventReason } from '../reasons.js';
import { describeError } from '../errors.js';

export interface EventRecord {
  /** The object the Event is about. */
  object: ObjectIdentity;
  type: 'Normal' | 'Warning';
  /** Specific CamelCase reason (HostsResolved, HostNotFound, JobFailed...), from shared/reasons.ts. */
  reason: EventReason;
  message: string;
  /** Which function reports it (reportingComponent / source.component). */
  component: string;
}

// Per-process memory of Events already written: name → count (the EventRecorder's correlator).
const seen = new Map<string, number>();
const seenLimit = 4096;

/** Deterministic name: the same object/reason/message always lands on the same Event. */
export function eventName(record: EventRecord): string {
  const digest = createHash('sha256')
    .update([record.object.uid, record.type, record.reason, record.message].join('\u0000'))
    .digest('hex')
    .slice(0, 16);
  return `${record.object.name.slice(0, 200)}.${digest}`;
}

/**
 * Writes a core/v1 Event. A repeat of the same Event (same object, reason, message) bumps `count`
 * and `lastTimestamp` instead of adding a new one. Events are a report, not the record (status
 * is): a failure here is logged and never fails the handler.
 */
export async function recordEvent(clients: KubeClients, record: EventRecord, log?: Logger): Promise<void> {
  const name = eventName(record);
  const namespace = record.object.namespace;
  const now = new Date();
  try {
    const known = seen.get(name);
    if (known === undefined) {
      const body: CoreV1Event = {
        metadata: { name, namespace },
        involvedObject: {
          apiVersion: record.object.apiVersion,
          kind: record.object.kind,
          name: record.object.name,
          namespace,
          uid: record.object.uid,
        },
        type: record.type,
        reason: record.reason,
        message: record.message.slice(0, 1024),
        source: { component: record.component },
        reportingComponent: `bpa-functions/${record.component}`,
        reportingInstance: process.env.HOSTNAME ?? record.component,
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      };
      try {
        await clients.core.createNamespacedEvent({ namespace, body });
        remember(name, 1);
        return;
      } catch (error) {
        if (!isConflict(error)) throw error;
      }
    }
    // Already there: bump the count (JSON patch; the RBAC grants create/patch, not get).
    const touched = await clients.core.patchNamespacedEvent({
      name,
      namespace,
      body: [{ op: 'replace', path: '/lastTimestamp', value: now.toISOString() }],
    });
    const count = Math.max(known ?? 0, touched.count ?? 1) + 1;
    await clients.core.patchNamespacedEvent({
      name,
      namespace,
      body: [{ op: 'replace', path: '/count', value: count }],
    });
    remember(name, count);
  } catch (error) {
    if (isNotFound(error)) seen.delete(name); // expired (Event TTL): recreated next time
    // A namespace being deleted takes no new Event; it would go with the namespace anyway.
    if (terminatingIn(classifyApiError(error, 'record a Kubernetes Event')) !== undefined) {
      log?.debug('Kubernetes Event not recorded: the namespace is being deleted', {
        reason: record.reason,
        object: `${record.object.namespace}/${record.object.name}`,
      });
      return;
    }
    log?.warn('could not record Kubernetes Event', {
      reason: record.reason,
      object: `${record.object.namespace}/${record.object.name}`,
      error: describeError(error).message,
    });
  }
}

function remember(name: string, count: number) {
  if (seen.size >= seenLimit) seen.delete(seen.keys().next().value as string);
  seen.set(name, count);
}
