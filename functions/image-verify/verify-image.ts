import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { checksumKey, checksumLine } from '../../shared/core/image-names.js';

export interface Digests {
  length: number;
  sha256: string;
  sha512: string;
}

export interface DigestOptions {
  /** Aborts the read (the verification deadline). */
  signal?: AbortSignal;
  /** Called after every `progressBytes` bytes read (awaited: a slow status write slows the read, never piles up). */
  onProgress?: (bytesRead: number) => Promise<void>;
  progressBytes?: number;
}

/** Reads an object back from the store once, hashing as it streams (constant memory). */
export async function digestObject(
  s3: S3Client,
  bucket: string,
  key: string,
  options: DigestOptions = {},
): Promise<Digests> {
  const object = await s3.send(
    new GetObjectCommand({ Bucket: bucket, Key: key }),
    options.signal ? { abortSignal: options.signal } : {},
  );
  const sha256 = createHash('sha256');
  const sha512 = createHash('sha512');
  let length = 0;
  let reported = 0;
  const body = object.Body as Readable;
  const abort = () => body.destroy(options.signal?.reason as Error);
  options.signal?.addEventListener('abort', abort, { once: true });
  try {
    for await (const chunk of body) {
      const bytes = chunk as Buffer;
      sha256.update(bytes);
      sha512.update(bytes);
      length += bytes.length;
      if (options.onProgress && options.progressBytes && length - reported >= options.progressBytes) {
        reported = length;
        await options.onProgress(length);
      }
    }
  } finally {
    options.signal?.removeEventListener('abort', abort);
  }
  options.signal?.throwIfAborted();
  return { length, sha256: sha256.digest('hex'), sha512: sha512.digest('hex') };
}

/** Writes `<key>.sha256sum`: one `sha256sum` line, the form Ironic reads from a checksum URL. */
export async function writeChecksumFile(
  s3: S3Client,
  bucket: string,
  key: string,
  sha256: string,
  imageName: string,
) {
  await s3.send(
    new PutObjectCommand({
      Bucket: bucket,
      Key: checksumKey(key),
      Body: checksumLine(sha256, imageName),
      ContentType: 'text/plain; charset=utf-8',
    }),
  );
}
