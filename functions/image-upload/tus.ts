import { Server, type Upload } from '@tus/server';
import { z } from 'zod';
import { parseImageKey } from '../../shared/core/image-names.js';
import { describeError, httpStatusFor } from '../../shared/errors.js';
import type { Logger } from '../../shared/log.js';
import {
  imageFormatSchema,
  imageSpecSchema,
  imageTypeSchema,
  sha256HexSchema,
  sha512HexSchema,
} from '../../shared/schemas/image.js';
import { AccessDenied, type ImageAccess, type ImageVerb } from './access.js';
import type { ImageStore } from './store.js';
import { HttpFailure } from './http-failure.js';
import { addressOf, type ImageAddress, type ImageUploads } from './uploads.js';

export const tusPath = '/files';

/** Upload ids are object keys (`container/alpha/beta/qwerty123`): base64url in the URL, one segment. */
export const encodeUploadId = (key: string) => Buffer.from(key, 'utf8').toString('base64url');
export function decodeUploadId(segment: string): string | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(segment)) return undefined;
  const key = Buffer.from(segment, 'base64url').toString('utf8');
  return parseImageKey(key) ? key : undefined;
}

export function addressOfKey(key: string): ImageAddress | undefined {
  const parts = parseImageKey(key);
  return parts && addressOf(parts.type, parts.owner, parts.clusterName, parts.imageName);
}

/** tus Upload-Metadata the service reads: where the image belongs, its name, optional format and checksums. */
const tusMetadataSchema = z.object({
  owner: z.string(),
  cluster: z.string(),
  type: imageTypeSchema,
  name: z.string(),
  format: imageFormatSchema.optional(),
  sha256: sha256HexSchema.optional(),
  sha512: sha512HexSchema.optional(),
});

/** What @tus/server sends for an error thrown by a hook. */
export const tusFailure = (status: number, reason: string, message: string) => ({
  status_code: status,
  body: `${reason}: ${message}\n`,
});

const verbOf: Record<string, ImageVerb> = {
  POST: 'create',
  PATCH: 'update',
  HEAD: 'get',
  GET: 'get',
  DELETE: 'delete',
};

function asTusFailure(error: unknown) {
  if (error instanceof AccessDenied || error instanceof HttpFailure)
    return tusFailure(error.status, error.reason, error.message);
  const { reason, message } = describeError(error);
  return tusFailure(httpStatusFor(error), reason, message);
}

/** The Image spec (length still 0) and address an upload's metadata names; throws a tus 400. */
function specFromMetadata(metadata: Record<string, string | null> | undefined) {
  const parsed = tusMetadataSchema.safeParse(metadata ?? {});
  if (!parsed.success)
    throw tusFailure(
      400,
      'InvalidMetadata',
      `Upload-Metadata needs owner, cluster, type (binary|container|os) and name: ${z.prettifyError(parsed.error)}`,
    );
  const m = parsed.data;
  const checksum = { ...(m.sha256 ? { sha256: m.sha256 } : {}), ...(m.sha512 ? { sha512: m.sha512 } : {}) };
  const spec = imageSpecSchema.safeParse({
    type: m.type,
    owner: m.owner,
    clusterName: m.cluster,
    imageName: m.name,
    length: 0,
    ...(m.format ? { format: m.format } : {}),
    ...(Object.keys(checksum).length > 0 ? { expectedChecksum: checksum } : {}),
  });
  if (!spec.success) throw tusFailure(400, 'InvalidMetadata', z.prettifyError(spec.error));
  return { spec: spec.data, address: addressOf(m.type, m.owner, m.cluster, m.name) };
}

export interface TusServerOptions {
  store: ImageStore;
  uploads: ImageUploads;
  access: ImageAccess;
  maxBytes: number;
  log: Logger;
}

/**
 * The tus 1.0 server (core, creation, creation-with-upload, termination, expiration): ids are the
 * object keys, every request is authorized against `images` in the owner's namespace, creation
 * makes the Image and finishing marks it Uploaded.
 */
export function createTusServer(options: TusServerOptions): Server {
  const { uploads, access, log } = options;
  const server = new Server({
    path: tusPath,
    datastore: options.store,
    maxSize: options.maxBytes,
    relativeLocation: true,
    respectForwardedHeaders: true,
    generateUrl: (_req, { path, id }) => `${path}/${encodeUploadId(id)}`,
    getFileIdFromRequest: (_req, lastPath) => (lastPath ? decodeUploadId(lastPath) : undefined),
    namingFunction: (_req, metadata) => specFromMetadata(metadata).address.key,
    onIncomingRequest: async (req, id) => {
      const address = addressOfKey(id);
      if (!address) throw tusFailure(404, 'UploadNotFound', 'No such upload');
      try {
        await access.authorize(
          { authorization: req.headers.get('authorization') ?? undefined },
          address.namespace,
          verbOf[req.method] ?? 'get',
        );
      } catch (error) {
        throw asTusFailure(error);
      }
    },
    onUploadCreate: async (_req, upload: Upload) => {
      const address = addressOfKey(upload.id)!;
      const { spec } = specFromMetadata(upload.metadata ?? undefined);
      if (upload.size === undefined)
        throw tusFailure(
          400,
          'LengthRequired',
          'Upload-Length is required (deferred length is not supported)',
        );
      if (upload.size === 0) throw tusFailure(400, 'EmptyImage', 'An image has at least one byte');
      if (await options.store.exists(address.key))
        throw tusFailure(409, 'ImageExists', `An upload of ${address.key} exists; DELETE it first`);
      try {
        await uploads.begin(address, { ...spec, length: upload.size });
      } catch (error) {
        throw asTusFailure(error);
      }
      return {};
    },
    onUploadFinish: async (_req, upload: Upload) => {
      const address = addressOfKey(upload.id)!;
      try {
        await uploads.finished(address, upload.size ?? upload.offset);
      } catch (error) {
        log.error('recording a finished upload failed', { key: upload.id, ...describeError(error) });
        throw asTusFailure(error);
      }
      return {};
    },
  });
  return server;
}
