import { CloudEvent } from 'cloudevents';
import { describeError, eventStatusFor } from '../errors.js';
import type { Logger } from '../log.js';
import type { InvocationOutcome } from '../telemetry/metrics.js';
import type { RequestSpan } from '../telemetry/tracing.js';
import type { HandlerResult } from './types.js';
import { encodeHttpEvent } from '../cloudevents/message.js';
import { notOnboardedIn, onboardCommand, terminatingIn } from '../k8s/api-errors.js';

/** The HTTP answer to one invocation. */
export interface InvocationAnswer {
  status: number;
  outcome: InvocationOutcome;
  reason?: string;
  /** 200: the reply in binary mode. */
  reply?: { event: CloudEvent<unknown>; headers: Record<string, string>; body: string | Uint8Array };
  /** >= 400: the message of the JSON error body. */
  message?: string;
}

/**
 * True when a handler's error is its namespace refusing the write, logged once: a namespace that
 * was not onboarded (the API refused the first write; warn, naming the command) or one being
 * deleted (what was to be written would go with it; info). Nothing was written and a retry would
 * meet the same refusal, so the caller answers as if done: no error answer, no retry loop. The
 * function server and the func adapter answer these alike.
 */
export function namespaceRefused(error: unknown, log: Logger): boolean {
  const namespace = notOnboardedIn(error);
  if (namespace !== undefined) {
    log.warn('namespace not onboarded', {
      namespace,
      command: onboardCommand(namespace),
      ...describeError(error),
    });
    return true;
  }
  const terminating = terminatingIn(error);
  if (terminating !== undefined) {
    log.info('namespace being deleted: nothing written there', {
      namespace: terminating,
      ...describeError(error),
    });
    return true;
  }
  return false;
}

/**
 * Runs the handler and maps what happens to the answer: a thrown error → eventStatusFor() with
 * its reason and message; nothing → 204; a CloudEvent → 200 with it in binary mode, carrying
 * the span's trace headers; anything else → 500 InvalidReply. The span is failed on errors.
 * `trace` is read once the handler is done, since continueTrace may have replaced its span.
 */
export async function invoke(
  functionName: string,
  run: () => Promise<HandlerResult>,
  trace: { readonly span?: RequestSpan; readonly log: Logger },
): Promise<InvocationAnswer> {
  let result: unknown;
  try {
    result = await run();
  } catch (error) {
    const { span, log } = trace; // read after the handler: it may have continued another trace
    if (namespaceRefused(error, log)) return { status: 204, outcome: 'ok' };
    const status = eventStatusFor(error);
    const described = describeError(error);
    span?.fail(described.message);
    if (status >= 500) log.error('handler failed', { ...described, stack: (error as Error)?.stack });
    return { status, outcome: status === 400 ? 'invalid' : 'error', ...described };
  }
  if (result === undefined || result === null) return { status: 204, outcome: 'ok' };
  const { span, log } = trace;
  let reply: CloudEvent<unknown>;
  try {
    if (!(result instanceof CloudEvent))
      throw new Error('the handler returned something that is not a CloudEvent');
    // The reply continues the trace: distributed-tracing extension + (in the answer) the HTTP header.
    reply = span ? result.cloneWith({ ...span.headers }) : result;
    if (reply.validate() !== true) throw new Error(`unsupported specversion ${reply.specversion}`);
  } catch (error) {
    const reason = 'InvalidReply';
    const message = `${functionName} produced an invalid reply event: ${describeError(error).message.split('\n')[0]}`;
    span?.fail(message);
    log.error('invalid reply', { reason, message });
    return { status: 500, outcome: 'error', reason, message };
  }
  return { status: 200, outcome: 'reply', reply: { event: reply, ...encodeHttpEvent(reply, 'binary') } };
}
