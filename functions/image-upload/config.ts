import type { z } from 'zod';
import { envInt, envList, envOptionalUrl, envString } from '../../shared/config.js';
import { s3EnvSchema } from '../../shared/storage/s3.js';

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
  /** How long a positive TokenReview + SubjectAccessReview answer is reused. */
  AUTH_CACHE_SECONDS: envInt(10, { min: 0 }),
});
export type ImageUploadConfig = z.infer<typeof imageUploadConfigSchema>;
