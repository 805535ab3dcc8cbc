import {
  createServer,
  type IncomingMessage,
  type Server as HttpServer,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';
import { parseEnv, type Env } from '../../shared/config.js';
import { describeError, httpStatusFor } from '../../shared/errors.js';
import { errorBody } from '../../shared/server/responses.js';
import { kubeClients } from '../../shared/k8s/clients.js';
import { createLogger, type Logger } from '../../shared/log.js';
import { s3Client, s3ClientConfig } from '../../shared/storage/s3.js';
import { imageServiceMetrics, routeOf } from './metrics.js';
import { AccessDenied, bearerToken, clientAddress, ImageAccess, type ImageVerb } from './access.js';
import { imageUploadConfigSchema, type ImageUploadConfig } from './config.js';
import { downloads } from './downloads.js';
import { legacyRoutes } from './legacy-routes.js';
import { ImageQuotas } from './quotas.js';
import { ImageStore } from './store.js';
import { createTusServer, decodeUploadId, addressOfKey, tusPath } from './tus.js';
import { HttpFailure } from './http-failure.js';
import { functionName, ImageUploads } from './uploads.js';

export { functionName };

export interface ImageServiceOptions {
  kubeConfig: KubeConfig;
  /** Raw environment (parsed with imageUploadConfigSchema), or a parsed config. */
  env?: Env;
  config?: ImageUploadConfig;
  log?: Logger;
}

export interface RunningImageService {
  /** http://host:port of the listening server. */
  url: string;
  port: number;
  config: ImageUploadConfig;
  /** TokenReviews this service has sent the API server (the failure limit keeps a flood of bad tokens from costing one each). */
  tokenReviews(): number;
  /** Stops accepting, cuts open connections (an upload in flight breaks, as a crash would), resolves when closed. */
  close(): Promise<void>;
}

/**
 * image-upload: the image service, the BPA REST agent's successor (docs/images.md). tus 1.0 at
 * /files, the original's routes at /v1/baremetalcluster/..., downloads of Ready images at
 * /images/<namespace>/<name>; each only when its role is enabled (IMAGE_SERVICE_ROLES).
 */
export async function startImageService(options: ImageServiceOptions): Promise<RunningImageService> {
  const config =
    options.config ?? parseEnv(imageUploadConfigSchema, options.env ?? process.env, functionName);
  const log = (options.log ?? createLogger()).child({ function: functionName });
  const clients = kubeClients(options.kubeConfig);
  const s3 = s3Client(config);
  const store = new ImageStore(
    {
      s3ClientConfig: s3ClientConfig(config),
      partSize: config.IMAGE_PART_BYTES,
      expirationPeriodInMilliseconds: config.UPLOAD_EXPIRATION_SECONDS * 1000,
      // Expiry is by listing unfinished multipart uploads; tags would need the store's tagging API.
      useTags: false,
    },
    s3,
  );
  const roles = new Set(config.IMAGE_SERVICE_ROLES);
  if (roles.has('download') && !config.IMAGE_URL_KEYS)
    throw new Error(
      'IMAGE_URL_KEYS is required to serve downloads: <id>:<secret>[,...], the keys image-verify signs URLs with (docs/images.md)',
    );
  const access = new ImageAccess(options.kubeConfig, config.AUTH_CACHE_SECONDS, Date.now, {
    failuresPerAddress: config.AUTH_FAILURES_PER_ADDRESS,
    windowSeconds: config.AUTH_FAILURE_WINDOW_SECONDS,
  });
  const clientOf = (req: IncomingMessage) => clientAddress(req, config.TRUSTED_PROXY_HOPS);
  const quotas = new ImageQuotas(clients, {
    defaults: { bytes: config.IMAGE_QUOTA_BYTES, uploads: config.IMAGE_QUOTA_UPLOADS },
    namespaces: config.IMAGE_NAMESPACE_QUOTAS,
  });
  const uploads = new ImageUploads(
    clients,
    store,
    config.S3_BUCKET,
    { url: config.K_SINK ?? config.BROKER_URL, tokenFile: config.SINK_TOKEN_FILE },
    log,
    quotas,
  );
  const tus = createTusServer({ store, uploads, access, maxBytes: config.IMAGE_MAX_BYTES, log });
  const handleTus = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '').split('?')[0]!;
    const key = path.startsWith(`${tusPath}/`) ? decodeUploadId(path.slice(tusPath.length + 1)) : undefined;
    const address = key ? addressOfKey(key) : undefined;
    const namespace =
      address?.namespace ??
      (req.method === 'POST' ? metadataOwner(req.headers['upload-metadata']) : undefined);
    // The token is checked here first (the tus hook's own check is then a cache hit) so that a
    // refused or rate-limited caller learns nothing of the namespace's quota use.
    const verb = tusVerbs[req.method ?? ''];
    if (namespace && verb) await access.authorize(req.headers, namespace, verb, clientOf(req));
    // A request that streams bytes into the store takes one of the namespace's upload slots.
    const streams = req.method === 'PATCH' || (req.method === 'POST' && hasBody(req));
    const release = namespace && streams ? quotas.acquireUpload(namespace) : undefined;
    if (release) res.once('close', release);
    // After every PATCH (the original's too, rewritten to tus), finished or broken off, the
    // Image's status.uploadOffset catches up with what the store holds.
    if (req.method === 'PATCH' && address) res.once('close', () => void uploads.progressed(address));
    // Released when the answer is sent or the connection breaks (tus.handle may resolve earlier).
    return tus.handle(req, res);
  };
  const legacy = legacyRoutes({
    store,
    uploads,
    access,
    maxBytes: config.IMAGE_MAX_BYTES,
    formMaxBytes: config.IMAGE_FORM_MAX_BYTES,
    tus: handleTus,
    clientOf,
  });
  const download = downloads(clients, s3, config.S3_BUCKET, log, config.IMAGE_URL_KEYS ?? []);
  const metrics = imageServiceMetrics();
  let closing = false;

  /** What a refused or failed request is logged with: its reason, message and (5xx) stack. */
  const refusals = new WeakMap<ServerResponse, { reason: string; message: string; stack?: string }>();
  const fail = (
    res: ServerResponse,
    status: number,
    reason: string,
    message: string,
    headers: Record<string, string> = {},
  ) => {
    refusals.set(res, { reason, message });
    if (res.headersSent) {
      res.destroy();
      return;
    }
    // A refusal before the body was read (429, 413, 401...): the rest of the body is read and
    // dropped, so the client, still sending, gets the answer instead of a broken connection.
    if (!res.req.complete) res.req.resume();
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(errorBody(reason, message));
  };

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let path: string;
    try {
      path = new URL(req.url ?? '/', 'http://image-service').pathname;
    } catch {
      return fail(res, 400, 'InvalidPath', 'The request target is not a valid URL path');
    }
    if (path === '/health/liveness') return void res.writeHead(200).end('ok\n');
    // What the PodMonitor scrapes (manifests/observability), on the serving port as for the functions.
    if (path === '/metrics' && (req.method === 'GET' || req.method === 'HEAD')) {
      const exposition = await metrics.exposition();
      return void res.writeHead(200, { 'content-type': exposition.contentType }).end(exposition.body);
    }
    if (path === '/health/readiness')
      return void res.writeHead(closing ? 503 : 200).end(closing ? 'closing\n' : 'ok\n');
    if (roles.has('download') && (await download(req, res, path))) return;
    if (!roles.has('upload')) return fail(res, 404, 'NotFound', `${path} is not served here`);
    if (path === tusPath || path.startsWith(`${tusPath}/`)) {
      const tusHeaders = { 'tus-resumable': '1.0.0' };
      if (req.method !== 'OPTIONS' && !bearerToken(req.headers))
        return fail(res, 401, 'Unauthenticated', 'A Kubernetes bearer token is required', {
          ...tusHeaders,
          'www-authenticate': 'Bearer',
        });
      if (req.method === 'DELETE') {
        // Termination removes every object of the upload and its Image (the store's stock remove leaves them).
        const key = decodeUploadId(path.slice(tusPath.length + 1));
        const address = key ? addressOfKey(key) : undefined;
        if (!address) return fail(res, 404, 'UploadNotFound', 'No such upload', tusHeaders);
        await access.authorize(req.headers, address.namespace, 'delete', clientOf(req));
        if (!(await uploads.terminate(address)))
          return fail(res, 404, 'UploadNotFound', 'No such upload', tusHeaders);
        return void res.writeHead(204, tusHeaders).end();
      }
      return handleTus(req, res);
    }
    if (await legacy(req, res, path)) return;
    fail(res, 404, 'NotFound', `${path} is not a route of the image service`);
  }

  // Slow clients time out (contract §12): the request line and headers within
  // HTTP_HEADERS_TIMEOUT_SECONDS (408), a socket with nothing moving for HTTP_IDLE_TIMEOUT_SECONDS
  // is closed, a whole request within HTTP_REQUEST_TIMEOUT_SECONDS when set (uploads of large
  // images are long requests: none by default, the idle timeout covers a stalled one).
  const headersTimeout = config.HTTP_HEADERS_TIMEOUT_SECONDS * 1000;
  const requestTimeout = config.HTTP_REQUEST_TIMEOUT_SECONDS * 1000;
  const server: HttpServer = createServer(
    {
      headersTimeout: requestTimeout > 0 ? Math.min(headersTimeout, requestTimeout) : headersTimeout,
      requestTimeout,
      keepAliveTimeout: config.HTTP_KEEP_ALIVE_SECONDS * 1000,
      // How often Node checks the two timeouts above: often enough for a short headers timeout.
      connectionsCheckingInterval: Math.max(100, Math.min(headersTimeout / 4, 30_000)),
    },
    (req, res) => {
      const started = process.hrtime.bigint();
      res.once('close', () => metrics.record(routeOf(req.url), req.method, res.statusCode, started));
      // One line per answer that is not a success: warn for what the client sent (4xx: it cannot
      // succeed as sent, nobody needs paging), error for what failed here (5xx).
      res.once('finish', () => {
        if (res.statusCode < 400) return;
        const line = {
          method: req.method,
          path: (req.url ?? '').split('?')[0],
          status: res.statusCode,
          ...refusals.get(res),
        };
        if (res.statusCode >= 500) log.error('request failed', line);
        else log.warn('request refused', line);
      });
      route(req, res).catch((error: unknown) => {
        if (error instanceof AccessDenied)
          return fail(res, error.status, error.reason, error.message, error.headers);
        const status = httpStatusFor(error);
        const { reason, message } = describeError(error);
        const headers = {
          ...(error instanceof HttpFailure ? error.headers : {}),
          ...(status === 401 ? { 'www-authenticate': 'Bearer' } : {}),
        };
        fail(res, status, reason, message, headers);
        if (status >= 500) refusals.set(res, { reason, message, stack: (error as Error)?.stack ?? '' });
      });
    },
  );
  server.setTimeout(config.HTTP_IDLE_TIMEOUT_SECONDS * 1000, (socket) => socket.destroy());
  // Bytes that are not HTTP (or a method Node does not parse): 400 with the JSON error body, as
  // the function server answers them, and keep serving; a request whose headers did not arrive
  // in time: 408.
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) return void socket.destroy();
    // Headers too large: no body, as Node answers it (the method is unknown, and a HEAD's client
    // could not read one).
    if (error.code === 'HPE_HEADER_OVERFLOW')
      return void socket.end(
        'HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n',
      );
    const timedOut = error.code === 'ERR_HTTP_REQUEST_TIMEOUT';
    const body = JSON.stringify({
      error: timedOut
        ? { reason: 'RequestTimeout', message: 'The request did not arrive in time' }
        : { reason: 'BadRequest', message: 'The request is not valid HTTP' },
    });
    socket.end(
      `HTTP/1.1 ${timedOut ? '408 Request Timeout' : '400 Bad Request'}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.PORT, config.HOST, () => resolve());
  });
  const expiry =
    config.UPLOAD_EXPIRATION_SECONDS > 0 && roles.has('upload')
      ? setInterval(
          () => {
            store.deleteExpired().then(
              (count) => count > 0 && log.info('expired uploads removed', { count }),
              (error: unknown) => log.warn('removing expired uploads failed', describeError(error)),
            );
          },
          Math.min(config.UPLOAD_EXPIRATION_SECONDS * 1000, 3600_000),
        ).unref()
      : undefined;
  const port = (server.address() as AddressInfo).port;
  const host = config.HOST === '0.0.0.0' ? '127.0.0.1' : config.HOST;
  log.info('image service listening', {
    port,
    roles: [...roles],
    bucket: config.S3_BUCKET,
    maxBytes: config.IMAGE_MAX_BYTES,
  });
  return {
    url: `http://${host}:${port}`,
    port,
    config,
    tokenReviews: () => access.tokenReviews,
    close: async () => {
      closing = true;
      if (expiry) clearInterval(expiry);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      s3.destroy();
    },
  };
}

const tusVerbs: Record<string, ImageVerb> = {
  POST: 'create',
  PATCH: 'update',
  HEAD: 'get',
  GET: 'get',
  DELETE: 'delete',
};

/** The `owner` of a tus Upload-Metadata header (`key base64,key base64`), if it has one. */
function metadataOwner(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string') return undefined;
  for (const pair of header.split(',')) {
    const [key, value] = pair.trim().split(' ');
    if (key === 'owner' && value) return Buffer.from(value, 'base64').toString('utf8');
  }
  return undefined;
}

/** Whether a request carries a body (creation-with-upload). */
const hasBody = (req: IncomingMessage) =>
  Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
