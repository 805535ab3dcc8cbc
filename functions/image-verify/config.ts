import type { z } from 'zod';
import { envInt, envString } from '../../shared/config.js';
import { s3EnvSchema } from '../../shared/storage/s3.js';
import { urlKeysSchema } from '../../shared/storage/signed-url.js';

/** image-verify reads the store (same S3 settings as image-upload) and signs the download URL. */
export const imageVerifyConfigSchema = s3EnvSchema.extend({
  /** Base of the download URLs written to status.url: the image-download Service. */
  IMAGE_DOWNLOAD_BASE_URL: envString('http://image-download.bpa-system.svc.cluster.local'),
  /** The URL signing keys (Secret bpa-image-url-keys): the first signs (shared/storage/signed-url.ts). */
  IMAGE_URL_KEYS: urlKeysSchema,
  /** How long a signed download URL stays valid after verification. */
  IMAGE_URL_TTL_SECONDS: envInt(30 * 24 * 3600, { min: 60 }),
  /**
   * The verification deadline grows with the image: length / this throughput (bytes per second),
   * and never less than IMAGE_VERIFY_MIN_SECONDS. A store slower than this is reported, not waited for.
   */
  IMAGE_VERIFY_MIN_BYTES_PER_SECOND: envInt(8 * 1024 ** 2, { min: 1 }),
  IMAGE_VERIFY_MIN_SECONDS: envInt(120, { min: 1 }),
  /** status.verification.bytesVerified is written every this many bytes (and at the end). */
  IMAGE_VERIFY_PROGRESS_BYTES: envInt(256 * 1024 ** 2, { min: 1024 ** 2 }),
});
export type ImageVerifyConfig = z.infer<typeof imageVerifyConfigSchema>;

/** Seconds a verification of `length` bytes may take. */
export const verifyDeadlineSeconds = (config: ImageVerifyConfig, length: number) =>
  Math.max(config.IMAGE_VERIFY_MIN_SECONDS, Math.ceil(length / config.IMAGE_VERIFY_MIN_BYTES_PER_SECOND));
