import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { z } from 'zod';
import { imageTypeFromRoute } from '../../shared/core/image-names.js';
import { replaceImageSpec, type StoredImage } from '../../shared/k8s/image.js';
import {
  imageClusterNameSchema,
  imageFormatSchema,
  imageNameSchema,
  imageOwnerSchema,
  imageSpecSchema,
  type ImageSpec,
  type ImageType,
} from '../../shared/schemas/image.js';
import type { ImageAccess } from './access.js';
import type { ImageStore } from './store.js';
import { encodeUploadId, tusPath } from './tus.js';
import { HttpFailure } from './http-failure.js';
import { addressOf, type ImageAddress, type ImageUploads } from './uploads.js';

/** `/v1/baremetalcluster/{owner}/{clustername}/{binary_images|container_images|os_images}[/{name}]` */
export const legacyRoute = /^\/v1\/baremetalcluster\/([^/]+)\/([^/]+)\/([^/]+)(?:\/([^/]+))?\/?$/;

/** The original's metadata document (the `metadata` part of its multipart POST). */
const legacyMetadataSchema = z
  .object({
    owner: z.string().optional(),
    cluster_name: z.string().optional(),
    type: z.string().optional(),
    image_name: z.string(),
    image_length: z.number().int().positive(),
    image_offset: z.number().int().optional(),
    upload_complete: z.boolean().optional(),
    format: imageFormatSchema.optional(),
    sha256: z.string().optional(),
    sha512: z.string().optional(),
    description: z.record(z.string(), z.unknown()).optional(),
  })
  .loose();
type LegacyMetadata = z.infer<typeof legacyMetadataSchema>;

/** The original's answer for an image, with this service's status beside it. */
function legacyView(image: StoredImage, offset: number) {
  const { spec, status } = image;
  return {
    owner: spec.owner,
    cluster_name: spec.clusterName,
    type: spec.type,
    image_name: spec.imageName,
    image_length: spec.length,
    image_offset: offset,
    upload_complete: offset === spec.length,
    description: spec.description ?? {},
    phase: status?.phase ?? 'Pending',
    ...(status?.sha256 ? { sha256: status.sha256 } : {}),
    ...(status?.url ? { url: status.url } : {}),
    upload_url: `${tusPath}/${encodeUploadId(status?.storage?.key ?? '')}`,
  };
}

/** Sets a request header in both views Node keeps (the tus server reads rawHeaders). */
function replaceHeader(req: IncomingMessage, name: string, value: string) {
  req.headers[name] = value;
  const raw = req.rawHeaders;
  for (let i = raw.length - 2; i >= 0; i -= 2) if (raw[i]!.toLowerCase() === name) raw.splice(i, 2);
  raw.push(name, value);
}

const sendJson = (
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body) + '\n');
};

export interface LegacyRoutesOptions {
  store: ImageStore;
  uploads: ImageUploads;
  access: ImageAccess;
  maxBytes: number;
  formMaxBytes: number;
  /** Hands a rewritten request to the tus server (the original's PATCH is a tus PATCH). */
  tus: (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  /** The caller's address, for the limit on failed token reviews (access.ts clientAddress). */
  clientOf?: (req: IncomingMessage) => string;
}

/**
 * The BPA REST agent's routes over the same uploads as tus. Differences from the original,
 * on purpose: owner and cluster name in the path are used (and must match the metadata),
 * a missing image is 404, PUT answers 200, every request needs a bearer token with the right on
 * `images`, and the multipart `file` part is read and not stored (the original did not store it
 * either: its e2e sends an unrelated file there and then PATCHes the image at offset 0).
 */
export function legacyRoutes(options: LegacyRoutesOptions) {
  const { store, uploads, access } = options;

  async function readForm(req: IncomingMessage): Promise<LegacyMetadata> {
    const declared = Number(req.headers['content-length'] ?? NaN);
    if (declared > options.formMaxBytes)
      throw new HttpFailure(
        413,
        'FormTooLarge',
        `The form is larger than ${options.formMaxBytes} bytes; send the image by PATCH or tus`,
      );
    let seen = 0;
    const limited = Readable.from(
      (async function* () {
        for await (const chunk of req as AsyncIterable<Buffer>) {
          seen += chunk.length;
          if (seen > options.formMaxBytes)
            throw new HttpFailure(
              413,
              'FormTooLarge',
              `The form is larger than ${options.formMaxBytes} bytes`,
            );
          yield chunk;
        }
      })(),
    );
    const type = String(req.headers['content-type'] ?? '');
    let text: string;
    if (type.startsWith('application/json')) {
      const chunks: Buffer[] = [];
      for await (const chunk of limited) chunks.push(chunk as Buffer);
      text = Buffer.concat(chunks).toString('utf8');
    } else if (type.startsWith('multipart/form-data')) {
      const form = await new Request('http://form/', {
        method: 'POST',
        headers: { 'content-type': type },
        body: Readable.toWeb(limited) as ReadableStream,
        duplex: 'half',
      } as RequestInit)
        .formData()
        .catch((error: unknown) => {
          if (error instanceof HttpFailure) throw error;
          throw new HttpFailure(400, 'InvalidForm', `The multipart body cannot be read: ${String(error)}`);
        });
      const part = form.get('metadata');
      if (part === null) throw new HttpFailure(400, 'MetadataMissing', 'The form has no `metadata` part');
      text = typeof part === 'string' ? part : await part.text();
    } else {
      throw new HttpFailure(
        415,
        'UnsupportedMediaType',
        'Send multipart/form-data with a `metadata` part, or application/json',
      );
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new HttpFailure(400, 'InvalidMetadata', 'The metadata is not JSON');
    }
    const parsed = legacyMetadataSchema.safeParse(json);
    if (!parsed.success) throw new HttpFailure(400, 'InvalidMetadata', z.prettifyError(parsed.error));
    return parsed.data;
  }

  /** The Image spec a metadata document describes, checked against the path. */
  function specOf(metadata: LegacyMetadata, owner: string, cluster: string, type: ImageType): ImageSpec {
    const mismatch = (field: string, value: unknown, path: string) =>
      new HttpFailure(
        400,
        'MetadataMismatch',
        `metadata ${field} ${JSON.stringify(value)} differs from the path's ${JSON.stringify(path)}`,
      );
    if (metadata.owner !== undefined && metadata.owner !== owner)
      throw mismatch('owner', metadata.owner, owner);
    if (metadata.cluster_name !== undefined && metadata.cluster_name !== cluster)
      throw mismatch('cluster_name', metadata.cluster_name, cluster);
    if (metadata.type !== undefined && metadata.type !== type) throw mismatch('type', metadata.type, type);
    const checksum = {
      ...(metadata.sha256 ? { sha256: metadata.sha256 } : {}),
      ...(metadata.sha512 ? { sha512: metadata.sha512 } : {}),
    };
    const spec = imageSpecSchema.safeParse({
      type,
      owner,
      clusterName: cluster,
      imageName: metadata.image_name,
      length: metadata.image_length,
      ...(metadata.format ? { format: metadata.format } : {}),
      ...(Object.keys(checksum).length > 0 ? { expectedChecksum: checksum } : {}),
      ...(metadata.description ? { description: metadata.description } : {}),
    });
    if (!spec.success) throw new HttpFailure(400, 'InvalidMetadata', z.prettifyError(spec.error));
    if (spec.data.length > options.maxBytes)
      throw new HttpFailure(
        413,
        'ImageTooLarge',
        `image_length ${spec.data.length} is over the maximum of ${options.maxBytes} bytes`,
      );
    return spec.data;
  }

  async function offsetOf(address: ImageAddress): Promise<number> {
    try {
      return (await store.getUpload(address.key)).offset;
    } catch {
      return 0;
    }
  }

  async function existing(address: ImageAddress): Promise<StoredImage> {
    const image = await uploads.find(address);
    if (!image)
      throw new HttpFailure(
        404,
        'ImageNotFound',
        `No ${address.type} image ${address.imageName} of cluster ${address.clusterName} in ${address.namespace}`,
      );
    return image;
  }

  /** Serves a request on a legacy route; false when the path is not one. */
  return async function handleLegacy(
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
  ): Promise<boolean> {
    const match = legacyRoute.exec(path);
    if (!match) return false;
    const [, owner = '', cluster = '', segment = '', rawName] = match;
    const type = imageTypeFromRoute(segment);
    if (!type)
      throw new HttpFailure(
        404,
        'UnknownImageType',
        `${segment} is not binary_images, container_images or os_images`,
      );
    let name: string | undefined;
    try {
      name = rawName === undefined ? undefined : decodeURIComponent(rawName);
    } catch {
      throw new HttpFailure(400, 'InvalidPath', `The image name ${rawName} is not valid percent-encoding`);
    }
    const method = req.method ?? 'GET';
    const needsName = method !== 'POST';
    const verb = ({ POST: 'create', GET: 'get', PUT: 'update', PATCH: 'update', DELETE: 'delete' } as const)[
      method as 'POST'
    ];
    if (!verb || needsName !== (name !== undefined)) {
      const allow = name === undefined ? 'POST' : 'GET, PUT, PATCH, DELETE';
      throw new HttpFailure(
        405,
        'MethodNotAllowed',
        `${method} is not allowed on ${path} (allowed: ${allow})`,
        {
          allow,
        },
      );
    }
    // The path names a namespace, a cluster and (but for POST) an image: values that cannot be
    // one are the request's error, answered before any API or store call.
    const segments: [string, z.ZodType, string | undefined][] = [
      ['owner', imageOwnerSchema, owner],
      ['cluster name', imageClusterNameSchema, cluster],
      ['image name', imageNameSchema, name],
    ];
    for (const [field, schema, value] of segments) {
      if (value === undefined) continue;
      const checked = schema.safeParse(value);
      if (!checked.success)
        throw new HttpFailure(
          400,
          'InvalidPath',
          `The path's ${field} ${JSON.stringify(value.slice(0, 80))} ${checked.error.issues[0]?.message ?? 'is not valid'}`,
        );
    }
    await access.authorize(req.headers, owner, verb, options.clientOf?.(req));

    if (method === 'POST') {
      const metadata = await readForm(req);
      const spec = specOf(metadata, owner, cluster, type);
      const address = addressOf(type, owner, cluster, spec.imageName);
      if (await store.exists(address.key))
        throw new HttpFailure(409, 'ImageExists', `An upload of ${address.key} exists; DELETE it first`);
      const image = await uploads.begin(address, spec);
      const { Upload } = await import('@tus/server');
      await store.create(
        new Upload({
          id: address.key,
          size: spec.length,
          offset: 0,
          metadata: { owner, cluster, type, name: spec.imageName },
        }),
      );
      sendJson(res, 201, legacyView(image, 0), { location: `${tusPath}/${encodeUploadId(address.key)}` });
      return true;
    }

    const address = addressOf(type, owner, cluster, name!);
    if (method === 'GET') {
      const image = await existing(address);
      sendJson(res, 200, legacyView(image, await offsetOf(address)));
      return true;
    }
    if (method === 'PUT') {
      const image = await existing(address);
      const metadata = await readForm(req);
      const spec = specOf(metadata, owner, cluster, type);
      if (spec.imageName !== image.spec.imageName)
        throw new HttpFailure(400, 'MetadataMismatch', 'image_name cannot change; POST a new image');
      if (spec.length !== image.spec.length)
        throw new HttpFailure(
          400,
          'LengthImmutable',
          `image_length is ${image.spec.length}; DELETE and POST again to change it`,
        );
      const updated = await replaceImageSpec(uploads.clients, image, {
        ...image.spec,
        ...spec,
        expectedChecksum: spec.expectedChecksum ?? image.spec.expectedChecksum,
      });
      sendJson(res, 200, legacyView(updated, await offsetOf(address)));
      return true;
    }
    if (method === 'DELETE') {
      if (!(await uploads.terminate(address)))
        throw new HttpFailure(
          404,
          'ImageNotFound',
          `No ${address.type} image ${address.imageName} of cluster ${address.clusterName} in ${address.namespace}`,
        );
      res.writeHead(204).end();
      return true;
    }
    // PATCH: the original's resumable write is a tus PATCH of the same upload, whose body must be
    // exactly the bytes that remain.
    const image = await existing(address);
    const offsetHeader = req.headers['upload-offset'];
    if (typeof offsetHeader !== 'string' || !/^\d+$/.test(offsetHeader))
      throw new HttpFailure(400, 'UploadOffsetRequired', 'PATCH needs an Upload-Offset header');
    const current = await offsetOf(address);
    if (Number(offsetHeader) !== current)
      throw new HttpFailure(409, 'UploadOffsetConflict', `The upload is at offset ${current}`, {
        'upload-offset': String(current),
      });
    const remaining = image.spec.length - current;
    const length = req.headers['content-length'];
    if (length === undefined || Number(length) !== remaining)
      throw new HttpFailure(
        400,
        'WrongLength',
        `The body must be the ${remaining} remaining bytes (Content-Length ${length ?? 'missing'})`,
      );
    req.url = `${tusPath}/${encodeUploadId(address.key)}`;
    replaceHeader(req, 'tus-resumable', '1.0.0');
    replaceHeader(req, 'content-type', 'application/offset+octet-stream');
    await options.tus(req, res);
    return true;
  };
}
