import { randomFillSync } from 'node:crypto';

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

// Random hex is cut from a pooled buffer: one crypto call per few hundred ids on the hot path.
const poolBytes = 4096;
const pool = Buffer.alloc(poolBytes);
let poolOffset = poolBytes;
function randomHex(bytes: number): string {
  if (poolOffset + bytes > poolBytes) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const hex = pool.toString('hex', poolOffset, poolOffset + bytes);
  poolOffset += bytes;
  return hex;
}
// All-zero ids are invalid; with 64 random bits that is astronomically unlikely, but cheap to rule out.
const randomNonZeroHex = (bytes: number): string => {
  const hex = randomHex(bytes);
  return /^0+$/.test(hex) ? randomNonZeroHex(bytes) : hex;
};
const randomHex32 = () => randomNonZeroHex(16);
const randomSpanId = () => randomNonZeroHex(8);

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
  // Fixed layout `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`: swap the parent id.
  const incoming = context.traceparent;
  const traceparent = `${incoming.slice(0, 36)}${randomSpanId()}${incoming.slice(52)}`;
  return context.tracestate ? { traceparent, tracestate: context.tracestate } : { traceparent };
}
