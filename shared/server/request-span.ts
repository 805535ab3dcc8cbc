import type { CloudEvent } from 'cloudevents';
import { describeError } from '../errors.js';
import type { Logger } from '../log.js';
import { traceIdOf, type RequestSpan, type TraceHeaders, type Tracing } from '../telemetry/tracing.js';
import { postToSink, type Sink } from './sink.js';

/**
 * The trace and the log binding of one request: the server span (when tracing is on), the
 * trace id on every log line (also when it is off), the span's headers for the answer, and
 * the client span of each `context.send`. `continueIn` moves the rest of the request into a
 * recorded trace (FunctionContext.continueTrace).
 */
export class RequestTrace {
  span?: RequestSpan;
  log: Logger;
  logFields: Record<string, unknown> = {};

  constructor(
    private readonly tracing: Tracing | undefined,
    private readonly baseLog: Logger,
    private readonly startTime: Date,
  ) {
    this.log = baseLog;
  }

  start(
    name: string,
    parent: TraceHeaders,
    attributes: Record<string, string>,
    linkedTo: readonly RequestSpan[] = [],
  ) {
    this.span = this.tracing?.startServerSpan(
      name,
      parent,
      { 'faas.trigger': 'pubsub', ...attributes },
      this.startTime,
      linkedTo,
    );
    // With tracing off there is no span, but the caller's trace id still goes on the logs.
    const traceId = this.span?.traceId ?? traceIdOf(parent.traceparent);
    if (traceId) this.logFields = { ...this.logFields, trace_id: traceId };
    this.log = this.baseLog.child(this.logFields);
  }

  /** traceparent (and tracestate) of the server span, for the answer. */
  responseHeaders(): Record<string, string> {
    return this.span ? { ...this.span.headers } : {};
  }

  /**
   * Ends the span so far (it stays in the event's own trace) and starts a new one as a child of
   * `traceparent`, linked to the old one. False, and nothing changed, for a malformed traceparent.
   */
  continueIn(
    traceparent: string,
    tracestate: string | undefined,
    name: string,
    attributes: Record<string, string>,
  ): boolean {
    const traceId = traceIdOf(traceparent);
    if (traceId === undefined) {
      this.log.warn('malformed traceparent not continued', { traceparent });
      return false;
    }
    const previous = this.span;
    const fromTraceId = this.logFields.trace_id;
    const continued: TraceHeaders = { traceparent, ...(tracestate ? { tracestate } : {}) };
    previous?.setAttributes({ 'bpa.trace.continued_in': traceId });
    previous?.end();
    this.start(name, continued, attributes, previous ? [previous] : []);
    this.log.debug('continuing a recorded trace', { from_trace_id: fromTraceId ?? null });
    return true;
  }

  /** `context.send` for the span as it is now: each event goes out in a client span of its own. */
  sender(functionName: string, sink: Sink): (event: CloudEvent<unknown>) => Promise<void> {
    const span = this.span;
    const requestLog = this.log;
    const tracing = this.tracing;
    return async (event) => {
      const child =
        span && tracing
          ? tracing.startClientSpan(`send ${event.type}`, span, {
              'cloudevents.event_id': event.id,
              'cloudevents.event_type': event.type,
            })
          : undefined;
      try {
        const outgoing = child ? event.cloneWith({ ...child.headers }) : event;
        const status = await postToSink(functionName, sink, outgoing, child ? { ...child.headers } : {});
        requestLog.debug('sent event', { sent_id: event.id, sent_type: event.type, status });
      } catch (error) {
        child?.fail(describeError(error).message);
        throw error;
      } finally {
        child?.end();
      }
    };
  }
}
