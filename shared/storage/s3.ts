import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { z } from 'zod';
import { envBoolean, envOptionalString, envString } from '../config.js';

/**
 * Where images are stored: any S3-compatible server (versitygw in tests and `bpa dev`, AWS,
 * Ceph RGW, ...). Credentials use the AWS SDK's own variables, so a mounted Secret with
 * AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY works as it does for every S3 tool.
 */
export const s3EnvSchema = z.object({
  /** e.g. http://127.0.0.1:7070; unset = AWS's own endpoint for the region. */
  S3_ENDPOINT: envOptionalString(),
  S3_REGION: envString('us-east-1'),
  S3_BUCKET: envString('bpa-images'),
  /** Path-style URLs (http://host/bucket/key): what self-hosted servers expect. */
  S3_FORCE_PATH_STYLE: envBoolean(true),
  AWS_ACCESS_KEY_ID: envOptionalString(),
  AWS_SECRET_ACCESS_KEY: envOptionalString(),
});
export type S3Env = z.infer<typeof s3EnvSchema>;

/** The S3 client options for a store; `bucket` rides along for @tus/s3-store. */
export function s3ClientConfig(env: S3Env): S3ClientConfig & { bucket: string } {
  return {
    bucket: env.S3_BUCKET,
    region: env.S3_REGION,
    forcePathStyle: env.S3_FORCE_PATH_STYLE,
    ...(env.S3_ENDPOINT ? { endpoint: env.S3_ENDPOINT } : {}),
    ...(env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY
      ? { credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY } }
      : {}),
    // Checksums only where S3 requires them: self-hosted servers differ in the flexible ones.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  };
}

export const s3Client = (env: S3Env) => new S3Client(s3ClientConfig(env));

/** True for the errors S3 answers about a missing key, bucket or multipart upload. */
export function isS3NotFound(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const name = 'name' in error ? String(error.name) : '';
  const status =
    '$metadata' in error && typeof error.$metadata === 'object' && error.$metadata !== null
      ? (error.$metadata as { httpStatusCode?: number }).httpStatusCode
      : undefined;
  return ['NoSuchKey', 'NotFound', 'NoSuchUpload', 'NoSuchBucket'].includes(name) || status === 404;
}
