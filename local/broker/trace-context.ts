import { randomUUID } from 'node:crypto';

/** W3C trace context (https://www.w3.org/TR/trace-context/) carried through every broker hop. */
export interface TraceContext {
  traceparent: string;
  tracestate?: string;
}

const traceparentPattern = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A valid incoming traceparent, or undefined (all-zero ids are invalid per the spec). */
export function parseTraceparent(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const match = traceparentPattern.exec(value.trim().toLowerCase());
  if (!match || /^0+$/.test(match[1]!) || /^0+$/.test(match[2]!)) return undefined;
  return match[0];
}

// randomUUID draws from a pooled buffer: much cheaper per call than randomBytes on the hot path.
const randomHex32 = () => randomUUID().replace(/-/g, '');
const randomSpanId = () => randomHex32().slice(0, 16);

/** A fresh sampled traceparent: a new trace when the producer sent none. */
export function newTraceparent(): string {
  return `00-${randomHex32()}-${randomSpanId()}-01`;
}

/** Trace context from request headers, generating a traceparent when absent or malformed. */
export function traceContextFrom(headers: Record<string, string | string[] | undefined>): TraceContext {
  const header = (name: string) => {
    const value = headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
  const traceparent = parseTraceparent(header('traceparent'));
  if (!traceparent) return { traceparent: newTraceparent() };
  const tracestate = header('tracestate');
  return tracestate ? { traceparent, tracestate } : { traceparent };
}

/** The trace id part of a traceparent, for logs. */
export const traceIdOf = (traceparent: string) => traceparent.split('-')[1] ?? '';

/** The same trace with a new parent span id: the broker's outgoing request is a new hop. */
export function childTraceContext(context: TraceContext): TraceContext {
  const [version, traceId, , flags] = context.traceparent.split('-');
  const traceparent = `${version}-${traceId}-${randomSpanId()}-${flags}`;
  return context.tracestate ? { traceparent, tracestate: context.tracestate } : { traceparent };
}
