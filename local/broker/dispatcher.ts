import type { Logger } from '../../shared/log.js';
import { sleep, type ConcurrencyLimiter } from './concurrency.js';
import type { DeliveryRecord } from './delivery-record.js';
import {
  decodeHttpEvent,
  encodeBinary,
  encodeStructured,
  messageEncoding,
  type BrokerEvent,
} from './event-codec.js';
import { postMessage, type Agents, type SendOutcome } from './http-sender.js';
import type { ResolvedBroker, ResolvedDelivery, ResolvedTrigger } from './load-config.js';
import type { BrokerMetrics } from './metrics.js';
import { backoffMs, isRetryable } from './retry-policy.js';
import { childTraceContext, traceContextFrom, type TraceContext } from './trace-context.js';

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
  /** Re-publishes a reply into a broker (the ingress path without HTTP). */
  ingest: (broker: ResolvedBroker, event: BrokerEvent, trace: TraceContext) => IngestResult;
  ingressUrl: (broker: ResolvedBroker) => string;
}

/** The result of one attempt, judged by Knative's rules. */
type AttemptResult =
  | { ok: true; status: number; reply?: BrokerEvent; replyTrace?: TraceContext }
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

export const withoutAttribute = (event: BrokerEvent, name: string): BrokerEvent => {
  if (!(name in event.attributes)) return event;
  const { [name]: _removed, ...attributes } = event.attributes;
  return event.data ? { attributes, data: event.data } : { attributes };
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
    return { ok: true, status, reply, replyTrace: traceContextFrom(headers) };
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

function messageFor(event: BrokerEvent, delivery: ResolvedDelivery) {
  return delivery.format === 'json' ? encodeStructured(event) : encodeBinary(event);
}

function traceHeaders(trace: TraceContext): Record<string, string> {
  return trace.tracestate
    ? { traceparent: trace.traceparent, tracestate: trace.tracestate }
    : { traceparent: trace.traceparent };
}

/** The dead-lettered event: the message as the broker held it plus the `knativeerror*` extensions. */
export function deadLetterEvent(
  event: BrokerEvent,
  destination: string,
  code: number,
  body: Buffer,
): BrokerEvent {
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
 * Delivers one event to one Trigger's subscriber: attempts with Knative's retry set and backoff,
 * a per-attempt timeout, `Prefer: reply`, `Kn-Namespace` and trace headers; a reply re-enters the
 * broker; a final failure goes to the dead-letter sink (same retry policy) or is dropped.
 * `brokerEvent` is the event as it entered the broker (with its TTL); the subscriber never sees the TTL.
 */
/** One POST under the broker's concurrency limit, with the delivery's per-attempt timeout. */
function postUnderLimit(
  target: URL,
  headers: Record<string, string>,
  body: Parameters<typeof postMessage>[1]['body'],
  delivery: ResolvedDelivery,
  deps: DispatcherDeps,
): Promise<SendOutcome> {
  const send = () =>
    postMessage(
      target,
      {
        headers,
        body,
        signal: deps.signal,
        ...(delivery.timeoutMs !== undefined ? { timeoutMs: delivery.timeoutMs } : {}),
      },
      deps.agents,
    ).then((outcome) => {
      deps.limiter.release();
      return outcome;
    });
  // With a free slot the request starts now, in the caller's tick (before the ingress answers).
  return deps.limiter.tryAcquire() ? send() : deps.limiter.acquire().then(send);
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

export async function deliverToTrigger(
  deps: DispatcherDeps,
  broker: ResolvedBroker,
  trigger: ResolvedTrigger,
  brokerEvent: BrokerEvent,
  trace: TraceContext,
  /** `brokerEvent` without the TTL, when the caller already has it. */
  withoutTtl?: BrokerEvent,
): Promise<void> {
  const { delivery } = trigger;
  const ttl = brokerEvent.attributes[ttlExtension];
  const toSubscriber = withoutTtl ?? withoutAttribute(brokerEvent, ttlExtension);
  const message = messageFor(toSubscriber, delivery);
  const outgoingTrace = childTraceContext(trace);
  const headers = {
    ...message.headers,
    prefer: 'reply',
    'kn-namespace': trigger.namespace,
    ...traceHeaders(outgoingTrace),
  };
  const target = targetUrl(trigger.subscriberUrl);
  const baseRecord = {
    broker: `${broker.namespace}/${broker.name}`,
    trigger: trigger.name,
    triggerNamespace: trigger.namespace,
    eventType: brokerEvent.attributes.type ?? '',
    eventId: brokerEvent.attributes.id ?? '',
    ...(brokerEvent.attributes.subject !== undefined ? { subject: brokerEvent.attributes.subject } : {}),
    target: trigger.subscriberUrl,
  };
  const labels = {
    kn_broker_namespace: broker.namespace,
    kn_broker_name: broker.name,
    kn_trigger_name: trigger.name,
    cloudevents_type: baseRecord.eventType,
  };
  const report = (record: DeliveryRecord) => {
    deps.metrics.deliveryOutcomes.inc({ ...labels, outcome: record.outcome });
    deps.emit(record);
  };

  let last: (AttemptResult & { ok: false }) | undefined;
  let lastAttempt = 0;
  let lastLatency = 0;
  for (let attempt = 1; attempt <= delivery.retry + 1; attempt++) {
    if (attempt > 1 && !(await sleep(backoffMs(delivery, attempt - 1), deps.signal))) break;
    if (deps.signal.aborted) break;
    const started = performance.now();
    const outcome = await postUnderLimit(target, headers, message.body, delivery, deps);
    const latencyMs = performance.now() - started;
    const result = judge(outcome);
    deps.metrics.dispatchDuration.observe(
      { ...labels, http_response_status_code: String(result.status ?? 500) },
      latencyMs / 1000,
    );
    if (result.ok) {
      report({
        ...baseRecord,
        attempt,
        status: result.status,
        latencyMs,
        outcome: 'delivered',
        replied: !!result.reply,
      });
      if (result.reply) {
        await forwardReply(
          deps,
          broker,
          trigger,
          brokerEvent,
          result.reply,
          ttl,
          result.replyTrace ?? outgoingTrace,
          {
            ...baseRecord,
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
      report({
        ...baseRecord,
        attempt,
        status: result.status,
        latencyMs,
        outcome: 'retry',
        reason: result.reason,
      });
      continue;
    }
    break;
  }

  if (!last) {
    deps.log.warn('delivery abandoned: broker is shutting down', {
      trigger: trigger.name,
      eventId: baseRecord.eventId,
    });
    return;
  }
  const finalRecord = { ...baseRecord, attempt: lastAttempt, status: last.status, latencyMs: lastLatency };
  if (deps.signal.aborted) {
    report({ ...finalRecord, outcome: 'dropped', reason: `${last.reason}; broker shutting down` });
    return;
  }
  const deadLettered = await sendToDeadLetterSink(
    deps,
    delivery,
    deadLetterEvent(brokerEvent, trigger.subscriberUrl, last.effectiveCode, last.errorBody),
    outgoingTrace,
  );
  if (deadLettered === 'sent') {
    report({ ...finalRecord, outcome: 'dead-lettered', reason: last.reason });
  } else {
    deps.log.warn('event dropped after failed delivery', {
      trigger: `${trigger.namespace}/${trigger.name}`,
      eventId: baseRecord.eventId,
      eventType: baseRecord.eventType,
      reason: last.reason,
      deadLetterSink: deadLettered,
    });
    report({
      ...finalRecord,
      outcome: 'dropped',
      reason:
        deadLettered === 'none' ? last.reason : `${last.reason}; dead-letter sink failed: ${deadLettered}`,
    });
  }
}

/** A reply carries the TTL the event had (the ingress decrements it) and re-enters the broker. */
async function forwardReply(
  deps: DispatcherDeps,
  broker: ResolvedBroker,
  trigger: ResolvedTrigger,
  original: BrokerEvent,
  reply: BrokerEvent,
  ttl: string | undefined,
  replyTrace: TraceContext,
  record: Omit<DeliveryRecord, 'status' | 'latencyMs' | 'outcome'>,
): Promise<void> {
  const withTtl: BrokerEvent =
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
  deps.metrics.deliveryOutcomes.inc({
    kn_broker_namespace: broker.namespace,
    kn_broker_name: broker.name,
    kn_trigger_name: trigger.name,
    cloudevents_type: record.eventType,
    outcome: deadLettered === 'sent' ? 'dead-lettered' : 'dropped',
  });
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
  event: BrokerEvent,
  trace: TraceContext,
): Promise<'sent' | 'none' | string> {
  if (!delivery.deadLetterSinkUrl) return 'none';
  const message = encodeBinary(event);
  const headers = { ...message.headers, ...traceHeaders(childTraceContext(trace)) };
  const target = targetUrl(delivery.deadLetterSinkUrl);
  let failure = 'not attempted';
  for (let attempt = 1; attempt <= delivery.retry + 1; attempt++) {
    if (attempt > 1 && !(await sleep(backoffMs(delivery, attempt - 1), deps.signal))) break;
    const outcome = await postUnderLimit(target, headers, message.body, delivery, deps);
    if (outcome.kind === 'response' && outcome.status >= 200 && outcome.status < 300) return 'sent';
    const status = outcome.kind === 'error' ? null : outcome.status;
    failure = outcome.kind === 'error' ? outcome.message : `dead-letter sink answered ${outcome.status}`;
    if (!isRetryable(status)) break;
  }
  return failure;
}
