import {
  AbortMultipartUploadCommand,
  DeleteObjectsCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { S3Store } from '@tus/s3-store';
import { imageSidecarSuffixes } from '../../shared/core/image-names.js';
import { isS3NotFound } from '../../shared/storage/s3.js';

/**
 * @tus/s3-store with a termination that removes every object an upload wrote. The stock
 * remove() aborts the multipart upload first and gives up (404) when the server says it is gone,
 * which a strict server (AWS, versitygw) says for every finished upload: the image and its
 * `.info` stayed behind. It also never removed the `.part` tail. This one aborts every pending
 * multipart upload of the key (ignoring "no such upload") and deletes the image, `.info`,
 * `.part` and `.sha256sum`.
 */
export class ImageStore extends S3Store {
  constructor(
    options: ConstructorParameters<typeof S3Store>[0],
    private readonly s3: S3Client,
  ) {
    super(options);
  }

  /** True when anything of the upload exists (the image or its `.info`). */
  async exists(key: string): Promise<boolean> {
    for (const candidate of [key, `${key}.info`]) {
      try {
        await this.s3.send(new HeadObjectCommand({ Bucket: this.bucket, Key: candidate }));
        return true;
      } catch (error) {
        if (!isS3NotFound(error)) throw error;
      }
    }
    return false;
  }

  /** Removes everything the upload of `key` wrote; resolves with whether anything existed. */
  async removeAll(key: string): Promise<boolean> {
    const existed = await this.exists(key);
    const pending = await this.s3.send(new ListMultipartUploadsCommand({ Bucket: this.bucket, Prefix: key }));
    for (const upload of pending.Uploads ?? []) {
      if (upload.Key !== key || !upload.UploadId) continue;
      try {
        await this.s3.send(
          new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: upload.UploadId }),
        );
      } catch (error) {
        if (!isS3NotFound(error)) throw error;
      }
    }
    await this.s3.send(
      new DeleteObjectsCommand({
        Bucket: this.bucket,
        Delete: {
          Objects: [key, ...imageSidecarSuffixes.map((suffix) => key + suffix)].map((Key) => ({ Key })),
          Quiet: true,
        },
      }),
    );
    await this.clearCache(key);
    return existed;
  }

  override async remove(id: string): Promise<void> {
    await this.removeAll(id);
  }
}
