import http from 'node:http';
import https from 'node:https';

/** What one POST produced: a response, or a connection-level failure (refused, reset, timeout). */
export type SendOutcome =
  | { kind: 'response'; status: number; headers: http.IncomingHttpHeaders; body: Buffer }
  | { kind: 'error'; message: string };

export interface SendOptions {
  headers: Record<string, string>;
  body: Buffer;
  /** Per-attempt timeout covering connect, request and response body. */
  timeoutMs?: number;
  /** Aborts the request (broker shutdown). */
  signal?: AbortSignal;
  /** Largest response body kept; the rest is read and dropped. */
  maxResponseBytes?: number;
}

/** Keep-alive agents so a busy trigger reuses connections like Knative's pooled transport. */
export function createAgents(maxSockets = 256) {
  return {
    http: new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets }),
    https: new https.Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets }),
  };
}
export type Agents = ReturnType<typeof createAgents>;

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
    const secure = url.protocol === 'https:';
    const request = (secure ? https : http).request({
      ...optionsFor(url),
      method: 'POST',
      agent: secure ? agents.https : agents.http,
      headers: { ...options.headers, 'content-length': String(options.body.length) },
    });
    const onAbort = () => {
      request.destroy(new Error('delivery aborted: broker is shutting down'));
    };
    if (options.signal?.aborted) {
      finish({ kind: 'error', message: 'delivery aborted: broker is shutting down' });
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
