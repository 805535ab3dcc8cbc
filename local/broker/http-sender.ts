import type http from 'node:http';
import https from 'node:https';
import { Http1Pool, type PostOutcome } from './http1-client.js';

/** What one POST produced: a response, or a connection-level failure (refused, reset, timeout). */
export type SendOutcome = PostOutcome;

export interface SendOptions {
  headers: Record<string, string>;
  body: Buffer;
  /** Per-attempt timeout covering connect, request and response body. */
  timeoutMs?: number;
  /** Shutdown: once aborted, no request starts (and an https one in flight is aborted). */
  signal?: AbortSignal;
  /** Largest response body kept; the rest is read and dropped. */
  maxResponseBytes?: number;
}

/**
 * Keep-alive connection pools so a busy trigger reuses connections like Knative's pooled
 * transport: `http1` (the broker's own client) for `http:` targets, an https.Agent for `https:`.
 */
export function createAgents(maxSockets = 256) {
  return {
    http1: new Http1Pool(),
    https: new https.Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets }),
  };
}
export type Agents = ReturnType<typeof createAgents>;

const abortedMessage = 'delivery aborted: broker is shutting down';

/**
 * Closes the pools: requests still in flight fail at once (a shutdown calls this right after it
 * aborts its signal, which stops backoffs and the requests not started yet).
 */
export function destroyAgents(agents: Agents): void {
  agents.http1.destroy(abortedMessage);
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
      ...(url.username || url.password
        ? { auth: `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` }
        : {}),
    };
    targetOptions.set(url, options);
  }
  return options;
}

/** POSTs a message and collects the whole response; never rejects. */
export function postMessage(url: URL, options: SendOptions, agents: Agents): Promise<SendOutcome> {
  if (options.signal?.aborted) return Promise.resolve({ kind: 'error', message: abortedMessage });
  if (url.protocol === 'http:') {
    // In flight, these end when the pool is destroyed (destroyAgents), not by a listener each.
    return agents.http1.post(url, options.headers, options.body, {
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      ...(options.maxResponseBytes !== undefined ? { maxResponseBytes: options.maxResponseBytes } : {}),
    });
  }
  let target: http.RequestOptions;
  try {
    target = optionsFor(url);
  } catch {
    // WHATWG URL keeps a bare '%' in userinfo as it is; decoding it throws.
    return Promise.resolve({ kind: 'error', message: 'URL credentials are not valid percent-encoding' });
  }
  return new Promise((resolve) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (outcome: SendOutcome) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      resolve(outcome);
    };
    const request = https.request({
      ...target,
      method: 'POST',
      agent: agents.https,
      headers: { ...options.headers, 'content-length': String(options.body.length) },
    });
    const onAbort = () => {
      request.destroy(new Error(abortedMessage));
    };
    if (options.signal?.aborted) {
      finish({ kind: 'error', message: abortedMessage });
      return;
    }
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (options.timeoutMs !== undefined) {
      timer = setTimeout(() => {
        request.destroy(new Error(`timeout after ${options.timeoutMs} ms`));
      }, options.timeoutMs);
    }
    request.on('error', (error) => finish({ kind: 'error', message: error.message }));
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      let kept = 0;
      const limit = options.maxResponseBytes ?? 10 * 1024 * 1024;
      response.on('data', (chunk: Buffer) => {
        if (kept < limit) {
          chunks.push(chunk);
          kept += chunk.length;
        }
      });
      response.on('error', (error) => finish({ kind: 'error', message: error.message }));
      response.on('close', () => {
        if (!response.complete) finish({ kind: 'error', message: 'response aborted before its end' });
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
