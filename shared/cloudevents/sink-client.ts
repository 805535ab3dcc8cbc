import { readFile } from 'node:fs/promises';
import type { CloudEvent } from 'cloudevents';
import { BpaError } from '../errors.js';
import { encodeHttpEvent, looksLikeCloudEvent, parseHttpEvent } from './message.js';

/**
 * Posts CloudEvents to a sink (a broker ingress, a function, any addressable). The SDK's
 * `httpTransport` resolves for every status and hides the reply, so this talks HTTP itself.
 */

export interface PostEventOptions {
  /** Structured mode (application/cloudevents+json) instead of binary mode. */
  structured?: boolean;
  /** Extra request headers (traceparent, Prefer, ...). */
  headers?: Record<string, string>;
  /** Per-attempt timeout. Default 30 s. */
  timeoutMs?: number;
  /**
   * A file holding a bearer token, read for each attempt (Knative renews it in place): sent as
   * `Authorization: Bearer <token>` when the file exists and is not empty, nothing otherwise.
   * This is how a sender under a SinkBinding authenticates to a Broker when Eventing's
   * `authentication-oidc` is on (the token Knative mounts at `knativeOidcTokenFile`).
   */
  tokenFile?: string;
}

/**
 * Where Knative mounts a SinkBinding's OIDC token (for its sink's audience) in the subject's pods
 * when `authentication-oidc` is enabled: a volume `oidc-token` at /oidc, key `token`.
 */
export const knativeOidcTokenFile = '/oidc/token';

/** `{ authorization: 'Bearer …' }` from `tokenFile`, or `{}` when it is unset, absent or empty. */
export async function bearerFromTokenFile(tokenFile: string | undefined): Promise<Record<string, string>> {
  if (!tokenFile) return {};
  let token: string;
  try {
    token = (await readFile(tokenFile, 'utf8')).trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new BpaError(
      'SinkTokenUnreadable',
      `Cannot read the sink's token file ${tokenFile}: ${(error as Error).message}`,
      'internal',
    );
  }
  return token ? { authorization: `Bearer ${token}` } : {};
}

export interface SinkResponse {
  status: number;
  statusText: string;
  /** Lower-case names. */
  headers: Record<string, string>;
  body: Buffer;
  /** The reply, when the response carries a valid CloudEvent. */
  replyEvent?: CloudEvent<unknown>;
  /** Why a response that looked like a CloudEvent could not be read as one. */
  replyError?: string;
}

/** Thrown when no HTTP response came back (refused, reset, DNS, timeout). */
export class SinkUnreachableError extends BpaError {
  constructor(
    readonly url: string,
    override readonly cause: unknown,
  ) {
    super('SinkUnreachable', `Cannot reach ${url}: ${describeNetworkError(cause)}`, 'transient');
  }
}

function describeNetworkError(error: unknown): string {
  // Duck-typed, not instanceof: fetch's errors may come from another realm (jest's vm modules).
  if (error !== null && typeof error === 'object' && 'message' in error) {
    const name = 'name' in error ? String(error.name) : '';
    if (name === 'TimeoutError' || name === 'AbortError') return 'timed out';
    const cause = 'cause' in error ? error.cause : undefined;
    if (cause !== null && typeof cause === 'object') {
      const code = 'code' in cause ? String(cause.code) : undefined;
      const message = 'message' in cause ? String(cause.message) : undefined;
      if (code || message) return [code, message].filter(Boolean).join(' ');
    }
    return String(error.message);
  }
  return String(error);
}

/** One POST, no retries. Resolves for every HTTP status; rejects with SinkUnreachableError. */
export async function postEvent(
  url: string,
  event: CloudEvent<unknown>,
  options: PostEventOptions = {},
): Promise<SinkResponse> {
  const message = encodeHttpEvent(event, options.structured ? 'structured' : 'binary');
  const authorization = await bearerFromTokenFile(options.tokenFile);
  let response: Response;
  let body: Buffer;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { ...message.headers, ...options.headers, ...authorization },
      body: message.body,
      signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
    });
    body = Buffer.from(await response.arrayBuffer());
  } catch (error) {
    throw new SinkUnreachableError(url, error);
  }
  return readSinkResponse(response.status, response.statusText, response.headers, body);
}

/** Builds a SinkResponse, parsing the reply event when there is one. */
export function readSinkResponse(
  status: number,
  statusText: string,
  headers: Headers | Record<string, string>,
  body: Buffer,
): SinkResponse {
  const plain: Record<string, string> = {};
  if (headers instanceof Headers) headers.forEach((value, name) => (plain[name.toLowerCase()] = value));
  else for (const [name, value] of Object.entries(headers)) plain[name.toLowerCase()] = value;
  const result: SinkResponse = { status, statusText, headers: plain, body };
  if (looksLikeCloudEvent(plain)) {
    const parsed = parseHttpEvent(plain, body);
    if (parsed.ok) result.replyEvent = parsed.event;
    else result.replyError = parsed.message;
  }
  return result;
}

export interface RetryPolicy {
  /** Attempts after the first one. */
  retries: number;
  /** Wait before the first retry; doubles each time. */
  initialDelayMs: number;
  /** HTTP statuses worth another attempt (connection errors always are). */
  retryStatuses: ReadonlySet<number>;
}

/**
 * Knative sources' rule (ApiServerSource, PingSource adapters): retry connection errors and
 * 404, 413, 425, 429, 502, 503, 504 (not 500), 5 times, exponential from 50 ms.
 */
export const knativeSourceRetry: RetryPolicy = {
  retries: 5,
  initialDelayMs: 50,
  retryStatuses: new Set([404, 413, 425, 429, 502, 503, 504]),
};

export interface PostWithRetryOptions extends PostEventOptions {
  retry?: RetryPolicy;
  /** Injected by tests to avoid real waits. */
  sleep?: (ms: number) => Promise<void>;
  /** Called before each retry with the attempt number (2, 3, ...) and why. */
  onRetry?: (attempt: number, why: string, delayMs: number) => void;
}

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * POSTs with the retry policy (default: Knative's source rules). Resolves with the last
 * response (2xx or not) and the number of attempts; rejects with SinkUnreachableError when the
 * last attempt got no response.
 */
export async function postEventWithRetry(
  url: string,
  event: CloudEvent<unknown>,
  options: PostWithRetryOptions = {},
): Promise<SinkResponse & { attempts: number }> {
  const policy = options.retry ?? knativeSourceRetry;
  const sleep = options.sleep ?? realSleep;
  for (let attempt = 1; ; attempt += 1) {
    const last = attempt > policy.retries;
    let why: string;
    try {
      const response = await postEvent(url, event, options);
      if (last || !policy.retryStatuses.has(response.status)) return { ...response, attempts: attempt };
      why = `HTTP ${response.status}`;
    } catch (error) {
      if (last || !(error instanceof SinkUnreachableError)) throw error;
      why = error.message;
    }
    const delayMs = policy.initialDelayMs * 2 ** (attempt - 1);
    options.onRetry?.(attempt + 1, why, delayMs);
    await sleep(delayMs);
  }
}
