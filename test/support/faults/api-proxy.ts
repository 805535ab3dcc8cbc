/**
 * A fault-injecting HTTP proxy in front of the kube-apiserver: clients talk plain HTTP to
 * 127.0.0.1:<port> (with their usual bearer token), the proxy talks HTTPS to the real server.
 * Faults: `cut()` (the API server is gone: open connections reset, new ones refused) and
 * `restore()` on the same port; `failNext()` (answer matching requests with a status, e.g. 409
 * on status writes or 500); `dropWatches()` (end every open watch stream). Response heads are
 * passed on at once, as the API server sends them (a quiet watch has a head and no body).
 */
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';

export interface RequestInfo {
  method: string;
  /** Path and query, e.g. /apis/bpa.akraino.org/v1alpha1/namespaces/x/provisionings/y/status */
  url: string;
  /** Set when the proxy answered this request itself with an injected status. */
  injectedStatus?: number;
}

export interface InjectedFailure {
  matches(request: RequestInfo): boolean;
  status: number;
  /** How many matching requests to fail; Infinity for all until cleared. */
  times: number;
  /** Matching requests failed so far. */
  failed: number;
}

export interface ApiProxy {
  url: string;
  /** A KubeConfig that reaches the API server through this proxy, with the same credentials. */
  kubeConfig: KubeConfig;
  /** Every request that passed or was failed, in order. */
  requests: RequestInfo[];
  failNext(matches: (request: RequestInfo) => boolean, status: number, times?: number): InjectedFailure;
  clearFailures(): void;
  /** Resets open connections and refuses new ones until restore(). */
  cut(): Promise<void>;
  restore(): Promise<void>;
  /** Ends every watch stream open now; returns how many. */
  dropWatches(): number;
  close(): Promise<void>;
}

const statusBody = (code: number) => {
  const reason =
    code === 409
      ? 'Conflict'
      : code === 500
        ? 'InternalError'
        : code === 503
          ? 'ServiceUnavailable'
          : 'Unknown';
  const message =
    code === 409
      ? 'Operation cannot be fulfilled: the object has been modified; please apply your changes to the latest version and try again (injected)'
      : `injected fault ${code}`;
  return JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    code,
  });
};

export async function startApiProxy(upstream: KubeConfig): Promise<ApiProxy> {
  const cluster = upstream.getCurrentCluster();
  const user = upstream.getCurrentUser();
  if (!cluster || !user?.token)
    throw new Error('startApiProxy needs a kubeconfig with a cluster and a bearer token');
  const target = new URL(cluster.server);
  const ca = cluster.caData ? Buffer.from(cluster.caData, 'base64') : undefined;
  const agent = new https.Agent({ keepAlive: true, ca, rejectUnauthorized: Boolean(ca), maxSockets: 64 });

  const failures: InjectedFailure[] = [];
  const requests: RequestInfo[] = [];
  const sockets = new Set<Socket>();
  const watches = new Set<{ end(): void }>();

  const server = http.createServer((request, response) => {
    const info: RequestInfo = { method: request.method ?? 'GET', url: request.url ?? '/' };
    requests.push(info);
    const failure = failures.find((f) => f.failed < f.times && f.matches(info));
    if (failure) {
      failure.failed++;
      info.injectedStatus = failure.status;
      request.resume();
      response
        .writeHead(failure.status, { 'content-type': 'application/json' })
        .end(statusBody(failure.status));
      return;
    }
    const upstreamRequest = https.request(
      {
        protocol: target.protocol,
        hostname: target.hostname,
        port: target.port,
        method: request.method,
        path: request.url,
        headers: { ...request.headers, host: target.host },
        agent,
      },
      (upstreamResponse) => {
        response.writeHead(upstreamResponse.statusCode ?? 502, upstreamResponse.headers);
        // Node sends the head with the first body chunk; a watch from a resourceVersion has
        // none until something changes, and the client waits for the head (client-node's Watch
        // resolves on it): host-lookup's BareMetalHost watch never connected through here.
        response.flushHeaders();
        upstreamResponse.pipe(response);
        if (/[?&]watch=(true|1)/.test(info.url)) {
          const handle = {
            end: () => {
              upstreamResponse.destroy();
              response.socket?.destroy();
            },
          };
          watches.add(handle);
          response.on('close', () => watches.delete(handle));
        }
      },
    );
    upstreamRequest.on('error', () => response.socket?.destroy());
    request.pipe(upstreamRequest);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;

  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'proxy', server: url, skipTLSVerify: true }],
    users: [{ name: 'proxy', token: user.token }],
    contexts: [{ name: 'proxy', cluster: 'proxy', user: 'proxy' }],
    currentContext: 'proxy',
  });

  let listening = true;
  const destroyAll = () => {
    for (const socket of sockets) socket.destroy();
  };
  return {
    url,
    kubeConfig,
    requests,
    failNext(matches, status, times = 1) {
      const failure: InjectedFailure = { matches, status, times, failed: 0 };
      failures.push(failure);
      return failure;
    },
    clearFailures: () => void failures.splice(0, failures.length),
    async cut() {
      if (!listening) return;
      listening = false;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      destroyAll();
      await closed;
    },
    async restore() {
      if (listening) return;
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => {
          server.off('error', reject);
          resolve();
        });
      });
      listening = true;
    },
    dropWatches() {
      const open = [...watches];
      for (const watch of open) watch.end();
      return open.length;
    },
    async close() {
      if (listening) {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        destroyAll();
        await closed;
      }
      agent.destroy();
    },
  };
}
