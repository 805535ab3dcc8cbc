import type { z } from 'zod';
import { envString } from '../../shared/config.js';
import { s3EnvSchema } from '../../shared/storage/s3.js';

/** image-verify reads the store (same S3 settings as image-upload) and names the download URL. */
export const imageVerifyConfigSchema = s3EnvSchema.extend({
  /** Base of the stable download URLs written to status.url: the image-download Service. */
  IMAGE_DOWNLOAD_BASE_URL: envString('http://image-download.bpa-system.svc.cluster.local'),
});
export type ImageVerifyConfig = z.infer<typeof imageVerifyConfigSchema>;
