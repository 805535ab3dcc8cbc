import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { checksumKey, checksumLine } from '../../shared/core/image-names.js';

export interface Digests {
  length: number;
  sha256: string;
  sha512: string;
}

/** Reads an object back from the store once, hashing as it streams (constant memory). */
export async function digestObject(s3: S3Client, bucket: string, key: string): Promise<Digests> {
  const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  const sha256 = createHash('sha256');
  const sha512 = createHash('sha512');
  let length = 0;
  for await (const chunk of object.Body as Readable) {
    const bytes = chunk as Buffer;
    sha256.update(bytes);
    sha512.update(bytes);
    length += bytes.length;
  }
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
