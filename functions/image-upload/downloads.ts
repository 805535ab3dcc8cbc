import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import { GetObjectCommand, HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { checksumLine } from '../../shared/core/image-names.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { readImage } from '../../shared/k8s/image.js';
import { dns1123LabelPattern, dns1123SubdomainPattern } from '../../shared/schemas/kube.js';
import type { Logger } from '../../shared/log.js';
import { isS3NotFound } from '../../shared/storage/s3.js';
import { checkSignature, type UrlKey } from '../../shared/storage/signed-url.js';
import { HttpFailure } from './http-failure.js';

/** `/images/<namespace>/<Image name>` and `/images/<namespace>/<Image name>.sha256sum`, each with its signature's query. */
export const downloadRoute = /^\/images\/([a-z0-9-]{1,63})\/([a-z0-9.-]{1,253}?)(\.sha256sum)?$/;
export const downloadPath = (namespace: string, name: string) => `/images/${namespace}/${name}`;

/**
 * Downloads of Ready images as Ironic (and curl, and any HTTP client) expects them: HEAD with
 * Content-Length, Last-Modified, ETag and Accept-Ranges; GET 200; a single Range 206 (416 when
 * unsatisfiable); If-None-Match 304 and If-Range. The bytes stream from the store (its own
 * Range support), never through memory. No token: Ironic's agent has none, so the URL is the
 * credential: signed for one Image (its uid), expiring (shared/storage/signed-url.ts); a missing,
 * wrong, tampered or expired signature is 403 before anything is read. Only Ready images
 * (verified) are served, and only under their Image's name.
 */
export function downloads(
  clients: KubeClients,
  s3: S3Client,
  bucket: string,
  log: Logger,
  keys: readonly UrlKey[],
) {
  return async function handleDownload(
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
  ): Promise<boolean> {
    const match = downloadRoute.exec(path);
    if (!match) return false;
    const [, namespace = '', name = '', checksumSuffix] = match;
    if (req.method !== 'GET' && req.method !== 'HEAD')
      throw new HttpFailure(405, 'MethodNotAllowed', `${req.method} is not allowed on ${path}`, {
        allow: 'GET, HEAD',
      });
    const query = new URL(req.url ?? '/', 'http://image-service').searchParams;
    const signature = checkSignature(
      query,
      { namespace, name, kind: checksumSuffix ? 'checksum' : 'image' },
      keys,
    );
    if (!signature.ok) throw new HttpFailure(403, signature.reason, signature.message);
    // Names no Image can have (`..`, `a.`) are not looked up: they would not name one object.
    if (!dns1123LabelPattern.test(namespace) || !dns1123SubdomainPattern.test(name))
      throw new HttpFailure(404, 'ImageNotFound', `No Image ${namespace}/${name}`);
    const image = await readImage(clients, namespace, name);
    // A URL signed for an Image that was deleted (and perhaps recreated under the same name) serves nothing.
    if (!image || image.metadata.uid !== signature.uid)
      throw new HttpFailure(
        404,
        'ImageNotFound',
        `The Image ${namespace}/${name} this URL was signed for no longer exists`,
      );
    const key = image.status?.storage?.key;
    if (image.status?.phase !== 'Ready' || !key || !image.status.sha256)
      throw new HttpFailure(404, 'ImageNotReady', `No Ready image ${namespace}/${name}`);
    if (checksumSuffix) {
      const body = checksumLine(image.status.sha256, image.spec.imageName);
      res.writeHead(200, {
        'content-type': 'text/plain; charset=utf-8',
        'content-length': Buffer.byteLength(body),
      });
      res.end(req.method === 'HEAD' ? undefined : body);
      return true;
    }
    let head;
    try {
      head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
    } catch (error) {
      if (!isS3NotFound(error)) throw error;
      log.error('a Ready image has no object', { namespace, name, key });
      throw new HttpFailure(404, 'ImageObjectMissing', `The store has no bytes for ${namespace}/${name}`);
    }
    const size = head.ContentLength ?? 0;
    const etag = head.ETag ?? `"${image.status.sha256}"`;
    const common: Record<string, string> = {
      'accept-ranges': 'bytes',
      etag,
      'content-type': 'application/octet-stream',
      ...(head.LastModified ? { 'last-modified': head.LastModified.toUTCString() } : {}),
      'x-checksum-sha256': image.status.sha256,
    };
    if (req.headers['if-none-match'] === etag) {
      res.writeHead(304, common).end();
      return true;
    }
    const ifRange = typeof req.headers['if-range'] === 'string' ? req.headers['if-range'] : undefined;
    const range = byteRange(req.headers.range, ifRange, etag, head.LastModified, size);
    if (range === 'unsatisfiable') {
      res.writeHead(416, { ...common, 'content-range': `bytes */${size}` }).end();
      return true;
    }
    const length = range ? range.end - range.start + 1 : size;
    const headers = {
      ...common,
      'content-length': String(length),
      ...(range ? { 'content-range': `bytes ${range.start}-${range.end}/${size}` } : {}),
    };
    if (req.method === 'HEAD') {
      res.writeHead(range ? 206 : 200, headers).end();
      return true;
    }
    const object = await s3.send(
      new GetObjectCommand({
        Bucket: bucket,
        Key: key,
        IfMatch: etag,
        ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
      }),
    );
    res.writeHead(range ? 206 : 200, headers);
    await pipeline(object.Body as Readable, res);
    return true;
  };
}

/**
 * The one byte range a Range header asks for (RFC 9110), honouring If-Range (an ETag or the
 * Last-Modified date); undefined = send the whole body (no header, a stale If-Range, several
 * ranges or junk); 'unsatisfiable' = 416.
 */
export function byteRange(
  header: string | undefined,
  ifRange: string | undefined,
  etag: string,
  lastModified: Date | undefined,
  size: number,
): { start: number; end: number } | 'unsatisfiable' | undefined {
  if (!header) return undefined;
  if (ifRange && ifRange !== etag && (!lastModified || ifRange !== lastModified.toUTCString()))
    return undefined;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === '')) return undefined;
  if (match[1] === '') {
    const suffix = Number(match[2]);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(match[1]);
  const end = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1);
  if (start >= size || start > end) return 'unsatisfiable';
  return { start, end };
}
