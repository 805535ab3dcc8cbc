import type { IncomingHttpHeaders } from 'node:http';
import http from 'node:http';
import https from 'node:https';

/** What one POST produced: a response, or a connection-level failure (refused, reset, timeout). */
export type SendOutcome =
  | { kind: 'response'; status: number; headers: IncomingHttpHeaders; body: Buffer }
  | { kind: 'error'; message: string };

export interface SendOptions {
  headers: Record<string, string>;
  body: Buffer;
  /** Per-attempt timeout covering connect, request and response body. */
  timeoutMs?: number;
  /** Shutdown: once aborted, no request starts (and those in flight are aborted). */
  signal?: AbortSignal;
  /** Largest response body kept; the rest is read and dropped. */
  maxResponseBytes?: number;
}

/**
 * Keep-alive connection pools (Node's http.Agent and https.Agent), so a busy trigger reuses
 * connections like Knative's pooled transport, and the requests in flight through them: a
 * shutdown fails those at once (destroyAgents).
 */
export interface Agents {
  http: http.Agent;
  https: https.Agent;
  inFlight: Set<http.ClientRequest>;
  closed: boolean;
}

export function createAgents(maxSockets = 256): Agents {
  const options = { keepAlive: true, maxSockets, maxFreeSockets: maxSockets };
  return {
    http: new http.Agent(options),
    https: new https.Agent(options),
    inFlight: new Set(),
    closed: false,
  };
}

const abortedMessage = 'delivery aborted: broker is shutting down';
const defaultMaxResponseBytes = 10 * 1024 * 1024;

/**
 * Closes the pools: requests still in flight fail at once, and later ones without being sent (a
 * shutdown calls this right after it aborts its signal, which stops backoffs and the requests
 * not started yet).
 */
export function destroyAgents(agents: Agents): void {
  agents.closed = true;
  for (const request of agents.inFlight) request.destroy(new Error(abortedMessage));
  agents.inFlight.clear();
  agents.http.destroy();
  agents.https.destroy();
}

const targetOptions = new WeakMap<URL, http.RequestOptions>();
/** Host, port and path of a target, worked out once per URL rather than per request. */
function optionsFor(url: URL): http.RequestOptions {
  let options = targetOptions.get(url);
  if (!options) {
    options = {
      protocol: url.protocol,
      hostname: url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname,
      port: url.port,
      path: `${url.pathname}${url.search}`,
      method: 'POST',
      ...(url.username || url.password
        ? { auth: `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` }
        : {}),
    };
    targetOptions.set(url, options);
  }
  return options;
}

/** POSTs a message to an `http:` or `https:` URL and collects the whole response; never rejects. */
export function postMessage(url: URL, options: SendOptions, agents: Agents): Promise<SendOutcome> {
  if (agents.closed || options.signal?.aborted)
    return Promise.resolve({ kind: 'error', message: abortedMessage });
  let target: http.RequestOptions;
  try {
    target = optionsFor(url);
  } catch {
    // WHATWG URL keeps a bare '%' in userinfo as it is; decoding it throws.
    return Promise.resolve({ kind: 'error', message: 'URL credentials are not valid percent-encoding' });
  }
  const secure = url.protocol === 'https:';
  return new Promise((resolve) => {
    let request: http.ClientRequest;
    try {
      // Throws for a header name or value Node refuses (CR LF, spaces in a name): nothing is sent.
      request = (secure ? https : http).request({
        ...target,
        agent: secure ? agents.https : agents.http,
        headers: { ...options.headers, 'content-length': String(options.body.length) },
      });
    } catch (error) {
      resolve({ kind: 'error', message: (error as Error).message });
      return;
    }
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (outcome: SendOutcome) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      agents.inFlight.delete(request);
      resolve(outcome);
    };
    agents.inFlight.add(request);
    if (options.timeoutMs !== undefined) {
      const timeoutMs = options.timeoutMs;
      timer = setTimeout(() => request.destroy(new Error(`timeout after ${timeoutMs} ms`)), timeoutMs);
    }
    request.on('error', (error) =>
      finish({ kind: 'error', message: agents.closed ? abortedMessage : error.message }),
    );
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      let kept = 0;
      const limit = options.maxResponseBytes ?? defaultMaxResponseBytes;
      response.on('data', (chunk: Buffer) => {
        if (kept < limit) {
          chunks.push(chunk);
          kept += chunk.length;
        }
      });
      // Node reports a connection lost mid-body as 'aborted'; say what it means.
      response.on('error', (error) =>
        finish({
          kind: 'error',
          message: agents.closed
            ? abortedMessage
            : response.complete
              ? error.message
              : 'response aborted before its end',
        }),
      );
      response.on('close', () => {
        if (!response.complete)
          finish({
            kind: 'error',
            message: agents.closed ? abortedMessage : 'response aborted before its end',
          });
      });
      response.on('end', () =>
        finish({
          kind: 'response',
          status: response.statusCode ?? 0,
          headers: response.headers,
          body: Buffer.concat(chunks),
        }),
      );
    });
    request.end(options.body);
  });
}
