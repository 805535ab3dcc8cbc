import { z } from 'zod';
import { knativeOidcTokenFile } from '../../shared/cloudevents/sink-client.js';
import { envInt, envList, envOptionalUrl, envString } from '../../shared/config.js';
import { s3EnvSchema } from '../../shared/storage/s3.js';
import { urlKeysSchema } from '../../shared/storage/signed-url.js';

/** Per-namespace overrides of the image quotas: `{"<namespace>": {"bytes": N, "uploads": N}}`. */
export const namespaceQuotasSchema = z.preprocess(
  (value) => {
    if (typeof value !== 'string' || value.trim() === '') return {};
    try {
      return JSON.parse(value) as unknown;
    } catch {
      return value; // reported by the record schema below as not an object
    }
  },
  z.record(
    z.string(),
    z.strictObject({
      bytes: z.number().int().nonnegative().optional(),
      uploads: z.number().int().nonnegative().optional(),
    }),
    { error: 'IMAGE_NAMESPACE_QUOTAS must be JSON: {"<namespace>": {"bytes": N, "uploads": N}}' },
  ),
);

/**
 * The image service's settings. One process can serve uploads (the Knative Service), downloads
 * (a plain Deployment: a large download must not run into a Knative request timeout), or both
 * (`bpa dev`, tests).
 */
export const imageUploadConfigSchema = s3EnvSchema.extend({
  PORT: envInt(8080, { min: 0, max: 65535 }),
  HOST: envString('0.0.0.0'),
  IMAGE_SERVICE_ROLES: envList(['upload', 'download'], ['upload', 'download']),
  /** Largest image accepted, in bytes: a larger Upload-Length or image_length gets 413 before any byte is stored. */
  IMAGE_MAX_BYTES: envInt(64 * 1024 ** 3, { min: 1 }),
  /** tus part size in the store (S3 multipart parts; at least 5 MiB). */
  IMAGE_PART_BYTES: envInt(8 * 1024 ** 2, { min: 5 * 1024 ** 2 }),
  /** An unfinished upload expires (tus expiration extension) this long after its creation; 0 = never. */
  UPLOAD_EXPIRATION_SECONDS: envInt(24 * 3600, { min: 0 }),
  /** Largest multipart body of the original's POST and PUT (metadata, and a `file` part that is not stored). */
  IMAGE_FORM_MAX_BYTES: envInt(16 * 1024 ** 2, { min: 1024 }),
  /** Where image.uploaded goes: K_SINK (SinkBinding) or BROKER_URL. */
  K_SINK: envOptionalUrl(),
  BROKER_URL: envOptionalUrl(),
  /** The bearer token sent with image.uploaded, as the functions' SINK_TOKEN_FILE (shared/config.ts). */
  SINK_TOKEN_FILE: envString(knativeOidcTokenFile),
  /** How long a positive TokenReview + SubjectAccessReview answer is reused. */
  AUTH_CACHE_SECONDS: envInt(10, { min: 0 }),
  /**
   * Failed token reviews (contract §12): a client address may fail this many within the window,
   * a token once; further tries get 429 with Retry-After and cost the API server nothing.
   */
  AUTH_FAILURES_PER_ADDRESS: envInt(10, { min: 1 }),
  AUTH_FAILURE_WINDOW_SECONDS: envInt(60, { min: 1 }),
  /**
   * How many proxies in front of the service append to X-Forwarded-For (Knative's activator and
   * queue-proxy: set it to what the cluster has); 0 = the socket's address is the client's.
   */
  TRUSTED_PROXY_HOPS: envInt(0, { min: 0, max: 10 }),
  /** The signing keys of download URLs (Secret bpa-image-url-keys; shared/storage/signed-url.ts); required with the download role. */
  IMAGE_URL_KEYS: urlKeysSchema.optional(),
  /** Per namespace: bytes of all its Images together (declared lengths, unfinished uploads included); 0 = no limit. */
  IMAGE_QUOTA_BYTES: envInt(256 * 1024 ** 3, { min: 0 }),
  /** Per namespace: upload requests (tus PATCH, creation-with-upload) streaming at once; 0 = no limit. */
  IMAGE_QUOTA_UPLOADS: envInt(4, { min: 0 }),
  /** Overrides of the two quotas per namespace. */
  IMAGE_NAMESPACE_QUOTAS: namespaceQuotasSchema,
  /** Slow clients (contract §12): the request line and headers must arrive within this. */
  HTTP_HEADERS_TIMEOUT_SECONDS: envInt(30, { min: 1 }),
  /** A whole request; 0 = none (an upload of a large image is one long PATCH; the idle timeout still applies). */
  HTTP_REQUEST_TIMEOUT_SECONDS: envInt(0, { min: 0 }),
  /** A socket with no bytes moving either way for this long is closed. */
  HTTP_IDLE_TIMEOUT_SECONDS: envInt(120, { min: 1 }),
  /** How long an idle keep-alive connection waits for its next request. */
  HTTP_KEEP_ALIVE_SECONDS: envInt(5, { min: 1 }),
});
export type ImageUploadConfig = z.infer<typeof imageUploadConfigSchema>;
