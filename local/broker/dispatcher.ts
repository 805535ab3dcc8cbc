import type { Logger } from '../../shared/log.js';
import { sleep, type ConcurrencyLimiter } from './concurrency.js';
import type { DeliveryRecord } from './delivery-record.js';
import {
  decodeHttpEvent,
  encodeBinary,
  encodeStructured,
  messageEncoding,
  type RawEvent,
} from '../../shared/cloudevents/http-codec.js';
import { postMessage, type Agents, type SendOutcome } from './http-sender.js';
import type { ResolvedBroker, ResolvedDelivery, ResolvedTrigger } from './load-config.js';
import { triggerDestination, type BrokerMetrics } from './metrics.js';
import { backoffMs, isRetryable } from './retry-policy.js';
import { childTraceContext, type TraceContext } from './trace-context.js';

export const ttlExtension = 'knativebrokerttl';
/** Knative truncates the base64 of the failed response body to this many characters. */
export const errorDataMaxLength = 1024;

/** What the ingress answers when an event (or a reply) enters a broker. */
export interface IngestResult {
  status: 202 | 400 | 404;
  reason?: string;
}

export interface DispatcherDeps {
  agents: Agents;
  limiter: ConcurrencyLimiter;
  metrics: BrokerMetrics;
  signal: AbortSignal;
  log: Logger;
  emit: (record: DeliveryRecord) => void;
  /** Whether anyone reads delivery records; when nobody does, none are built. */
  recordsWanted: () => boolean;
  /** Re-publishes a reply into a broker (the ingress path without HTTP). */
  ingest: (broker: ResolvedBroker, event: RawEvent, trace: TraceContext) => IngestResult;
  ingressUrl: (broker: ResolvedBroker) => string;
}

/** The result of one attempt, judged by Knative's rules. */
type AttemptResult =
  | { ok: true; status: number; reply?: RawEvent }
  | {
      ok: false;
      /** HTTP status seen, null for connection errors/timeouts. */
      status: number | null;
      /** The code Knative acts on and reports: 500 for dispatch errors, 502 for a bad reply. */
      effectiveCode: number;
      /** Body for `knativeerrordata`. */
      errorBody: Buffer;
      reason: string;
    };

/** Judges a subscriber's answer: 2xx with nothing or a CloudEvent is success; anything else fails. */
function judge(outcome: SendOutcome): AttemptResult {
  if (outcome.kind === 'error') {
    return {
      ok: false,
      status: null,
      effectiveCode: 500,
      errorBody: Buffer.from(`dispatch error: ${outcome.message}`),
      reason: outcome.message,
    };
  }
  const { status, headers, body } = outcome;
  if (status < 200 || status >= 300) {
    return {
      ok: false,
      status,
      effectiveCode: status,
      errorBody: body,
      reason: `subscriber answered ${status}`,
    };
  }
  const encoding = messageEncoding(headers);
  if (encoding === 'unknown') {
    if (body.length === 0) return { ok: true, status };
    return {
      ok: false,
      status,
      effectiveCode: 502,
      errorBody: body,
      reason: 'non-empty response that is not a CloudEvent (treated as 502)',
    };
  }
  try {
    const reply = decodeHttpEvent(headers, body);
    return { ok: true, status, reply };
  } catch (error) {
    return {
      ok: false,
      status,
      effectiveCode: 502,
      errorBody: body,
      reason: `malformed CloudEvent reply (treated as 502): ${(error as Error).message}`,
    };
  }
}

function messageFor(event: RawEvent, delivery: ResolvedDelivery) {
  return delivery.format === 'json' ? encodeStructured(event) : encodeBinary(event);
}

function traceHeaders(trace: TraceContext): Record<string, string> {
  return trace.tracestate
    ? { traceparent: trace.traceparent, tracestate: trace.tracestate }
    : { traceparent: trace.traceparent };
}

/** The dead-lettered event: the message as the broker held it plus the `knativeerror*` extensions. */
export function deadLetterEvent(event: RawEvent, destination: string, code: number, body: Buffer): RawEvent {
  return {
    ...event,
    attributes: {
      ...event.attributes,
      knativeerrordest: destination,
      knativeerrorcode: String(code),
      knativeerrordata: body.toString('base64').slice(0, errorDataMaxLength),
    },
  };
}

/**
 * One POST under the broker's concurrency limit, with the delivery's per-attempt timeout. With
 * a free slot the request starts now, in the caller's tick (before the ingress answers), and
 * no promise is made beyond the request's own.
 */
function postUnderLimit(
  target: URL,
  headers: Record<string, string>,
  body: Buffer,
  delivery: ResolvedDelivery,
  deps: DispatcherDeps,
): Promise<SendOutcome> {
  const send = () =>
    postMessage(
      target,
      delivery.timeoutMs !== undefined
        ? { headers, body, signal: deps.signal, timeoutMs: delivery.timeoutMs }
        : { headers, body, signal: deps.signal },
      deps.agents,
    );
  // The caller releases the slot when the outcome is in (releaseAfter).
  return deps.limiter.tryAcquire() ? send() : deps.limiter.acquire().then(send);
}

/** Gives the concurrency slot back once a POST has its outcome. */
function releaseAfter(deps: DispatcherDeps, outcome: SendOutcome): SendOutcome {
  deps.limiter.release();
  return outcome;
}

const targetUrls = new Map<string, URL>();
/** Subscriber and sink URLs come from configuration, so parsing each once is enough. */
function targetUrl(url: string): URL {
  let parsed = targetUrls.get(url);
  if (!parsed) {
    parsed = new URL(url);
    targetUrls.set(url, parsed);
  }
  return parsed;
}

/** The event as the broker holds it: with its TTL (what dead-letter sinks and replies get). */
export function withTtl(event: RawEvent, ttl: string | undefined): RawEvent {
  if (ttl === undefined) return event;
  const attributes = { ...event.attributes, [ttlExtension]: ttl };
  return event.data ? { attributes, data: event.data } : { attributes };
}

/**
 * Delivers one event to one Trigger's subscriber: attempts with Knative's retry set and backoff,
 * a per-attempt timeout, `Prefer: reply`, `Kn-Namespace` and trace headers; a reply re-enters the
 * broker; a final failure goes to the dead-letter sink (same retry policy) or is dropped.
 * `event` is what the subscriber gets (without the TTL); `ttl` is the broker's TTL for it.
 * Rejects only on a bug (say, a delivery listener that throws); the broker logs that.
 */
export async function deliverToTrigger(
  deps: DispatcherDeps,
  broker: ResolvedBroker,
  trigger: ResolvedTrigger,
  event: RawEvent,
  ttl: string | undefined,
  trace: TraceContext,
): Promise<void> {
  const { delivery } = trigger;
  const eventType = event.attributes.type ?? '';
  // A fresh object per event: the routing headers are added to it in place.
  const { headers, body } = messageFor(event, delivery);
  const outgoingTrace = childTraceContext(trace);
  headers.prefer = 'reply';
  headers['kn-namespace'] = trigger.namespace;
  headers.traceparent = outgoingTrace.traceparent;
  if (outgoingTrace.tracestate) headers.tracestate = outgoingTrace.tracestate;
  const target = targetUrl(trigger.subscriberUrl);
  /** What every delivery record of this event says; built only when someone reads records. */
  const baseRecord = () => ({
    broker: `${broker.namespace}/${broker.name}`,
    trigger: trigger.name,
    triggerNamespace: trigger.namespace,
    eventType,
    eventId: event.attributes.id ?? '',
    ...(event.attributes.subject !== undefined ? { subject: event.attributes.subject } : {}),
    target: trigger.subscriberUrl,
  });
  const destination = triggerDestination(trigger.namespace, trigger.name);
  const report = (outcome: DeliveryRecord['outcome'], record: () => DeliveryRecord) => {
    deps.metrics.deliveryOutcomes
      .series(broker.namespace, broker.name, destination, eventType, outcome)
      .inc();
    if (deps.recordsWanted()) deps.emit(record());
  };

  let last: (AttemptResult & { ok: false }) | undefined;
  let lastAttempt = 0;
  let lastLatency = 0;
  for (let attempt = 1; attempt <= delivery.retry + 1; attempt++) {
    if (attempt > 1 && !(await sleep(backoffMs(delivery, attempt - 1), deps.signal))) break;
    if (deps.signal.aborted) break;
    const started = performance.now();
    const outcome = releaseAfter(deps, await postUnderLimit(target, headers, body, delivery, deps));
    const latencyMs = performance.now() - started;
    const result = judge(outcome);
    deps.metrics.dispatchDuration
      .series(broker.namespace, broker.name, destination, eventType, String(result.status ?? 500))
      .observe(latencyMs / 1000);
    if (result.ok) {
      report('delivered', () => ({
        ...baseRecord(),
        attempt,
        status: result.status,
        latencyMs,
        outcome: 'delivered',
        replied: !!result.reply,
      }));
      if (result.reply) {
        await forwardReply(
          deps,
          broker,
          trigger,
          withTtl(event, ttl),
          result.reply,
          ttl,
          // As Knative: the reply goes on in the delivery's context. Its filter drops the
          // subscriber's `traceparent` answer header (it passes on only x-request-id,
          // retry-after, knative-* and x-b3-*); the reply's own traceparent extension stays.
          outgoingTrace,
          {
            ...baseRecord(),
            attempt,
          },
        );
      }
      return;
    }
    last = result;
    lastAttempt = attempt;
    lastLatency = latencyMs;
    if (attempt <= delivery.retry && isRetryable(result.status === null ? null : result.effectiveCode)) {
      report('retry', () => ({
        ...baseRecord(),
        attempt,
        status: result.status,
        latencyMs,
        outcome: 'retry',
        reason: result.reason,
      }));
      continue;
    }
    break;
  }

  if (!last) {
    deps.log.warn('delivery abandoned: broker is shutting down', {
      trigger: trigger.name,
      eventId: event.attributes.id ?? '',
    });
    return;
  }
  const failed = last;
  const finalRecord = () => ({
    ...baseRecord(),
    attempt: lastAttempt,
    status: failed.status,
    latencyMs: lastLatency,
  });
  if (deps.signal.aborted) {
    report('dropped', () => ({
      ...finalRecord(),
      outcome: 'dropped',
      reason: `${failed.reason}; broker shutting down`,
    }));
    return;
  }
  const deadLettered = await sendToDeadLetterSink(
    deps,
    delivery,
    deadLetterEvent(withTtl(event, ttl), trigger.subscriberUri, failed.effectiveCode, failed.errorBody),
    outgoingTrace,
  );
  if (deadLettered === 'sent') {
    report('dead-lettered', () => ({ ...finalRecord(), outcome: 'dead-lettered', reason: failed.reason }));
  } else {
    deps.log.warn('event dropped after failed delivery', {
      trigger: `${trigger.namespace}/${trigger.name}`,
      eventId: event.attributes.id ?? '',
      eventType,
      reason: failed.reason,
      deadLetterSink: deadLettered,
    });
    report('dropped', () => ({
      ...finalRecord(),
      outcome: 'dropped',
      reason:
        deadLettered === 'none'
          ? failed.reason
          : `${failed.reason}; dead-letter sink failed: ${deadLettered}`,
    }));
  }
}

/** A reply carries the TTL the event had (the ingress decrements it) and re-enters the broker. */
async function forwardReply(
  deps: DispatcherDeps,
  broker: ResolvedBroker,
  trigger: ResolvedTrigger,
  original: RawEvent,
  reply: RawEvent,
  ttl: string | undefined,
  replyTrace: TraceContext,
  record: Omit<DeliveryRecord, 'status' | 'latencyMs' | 'outcome'>,
): Promise<void> {
  const withTtl: RawEvent =
    ttl === undefined ? reply : { ...reply, attributes: { ...reply.attributes, [ttlExtension]: ttl } };
  const result = deps.ingest(broker, withTtl, replyTrace);
  if (result.status === 202) return;
  // Knative forwards replies to the broker ingress; when that fails the original event is
  // dead-lettered with the ingress as destination.
  const ingress = deps.ingressUrl(broker);
  const reason = `reply ${reply.attributes.type ?? ''} refused by the broker ingress (${result.status}): ${result.reason ?? ''}`;
  const deadLettered = await sendToDeadLetterSink(
    deps,
    trigger.delivery,
    deadLetterEvent(original, ingress, result.status, Buffer.alloc(0)),
    replyTrace,
  );
  deps.metrics.deliveryOutcomes
    .series(
      broker.namespace,
      broker.name,
      triggerDestination(trigger.namespace, trigger.name),
      record.eventType,
      deadLettered === 'sent' ? 'dead-lettered' : 'dropped',
    )
    .inc();
  deps.emit({
    ...record,
    target: ingress,
    status: result.status,
    latencyMs: 0,
    outcome: deadLettered === 'sent' ? 'dead-lettered' : 'dropped',
    reason,
  });
}

/** `sent`, `none` (no sink configured) or why the sink failed. */
async function sendToDeadLetterSink(
  deps: DispatcherDeps,
  delivery: ResolvedDelivery,
  event: RawEvent,
  trace: TraceContext,
): Promise<'sent' | 'none' | string> {
  if (!delivery.deadLetterSinkUrl) return 'none';
  const message = encodeBinary(event);
  const headers = { ...message.headers, ...traceHeaders(childTraceContext(trace)) };
  const target = targetUrl(delivery.deadLetterSinkUrl);
  let failure = 'not attempted';
  for (let attempt = 1; attempt <= delivery.retry + 1; attempt++) {
    if (attempt > 1 && !(await sleep(backoffMs(delivery, attempt - 1), deps.signal))) break;
    const outcome = releaseAfter(deps, await postUnderLimit(target, headers, message.body, delivery, deps));
    if (outcome.kind === 'response' && outcome.status >= 200 && outcome.status < 300) return 'sent';
    const status = outcome.kind === 'error' ? null : outcome.status;
    failure = outcome.kind === 'error' ? outcome.message : `dead-letter sink answered ${outcome.status}`;
    if (!isRetryable(status)) break;
  }
  return failure;
}
