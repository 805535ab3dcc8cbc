import { chainEvent } from '../../shared/cloudevents/chain-event.js';
import { imageObjectKey } from '../../shared/core/image-names.js';
import {
  EventTypes,
  imageSubject,
  imageUploadedDataSchema,
  type ImageUploadedData,
} from '../../shared/events/types.js';
import { kubeClients } from '../../shared/k8s/clients.js';
import { setCondition } from '../../shared/k8s/conditions.js';
import { recordEvent } from '../../shared/k8s/events.js';
import { fieldManagerFor } from '../../shared/k8s/status-apply.js';
import {
  ImageCondition,
  imageIdentity,
  imageRef,
  readImage,
  updateImageStatus,
} from '../../shared/k8s/image.js';
import { funcHandle } from '../../shared/server/func-adapter.js';
import {
  on,
  type FunctionContext,
  type FunctionDefinition,
  type HandlerResult,
} from '../../shared/server/types.js';
import { transient } from '../../shared/errors.js';
import { s3Client } from '../../shared/storage/s3.js';
import { signDownloadUrl } from '../../shared/storage/signed-url.js';
import { imageVerifyConfigSchema, verifyDeadlineSeconds, type ImageVerifyConfig } from './config.js';
import { digestObject, writeChecksumFile, type Digests } from './verify-image.js';

export const functionName = 'image-verify';
/** The field manager of image-verify's status applies (Ready, the digests, the URLs). */
const manager = fieldManagerFor(functionName);

// One S3 client per config object: it holds the connection pool.
const clientsByConfig = new WeakMap<ImageVerifyConfig, ReturnType<typeof s3Client>>();
const s3For = (config: ImageVerifyConfig) => {
  let client = clientsByConfig.get(config);
  if (!client) clientsByConfig.set(config, (client = s3Client(config)));
  return client;
};

/** Why stored bytes are not the image the uploader declared, or undefined when they are. */
function mismatch(
  digests: Digests,
  length: number,
  expected: { sha256?: string | undefined; sha512?: string | undefined } | undefined,
): { reason: 'LengthMismatch' | 'ChecksumMismatch'; message: string } | undefined {
  if (digests.length !== length)
    return {
      reason: 'LengthMismatch',
      message: `The store holds ${digests.length} bytes; the Image declares ${length}`,
    };
  if (expected?.sha256 && expected.sha256 !== digests.sha256)
    return {
      reason: 'ChecksumMismatch',
      message: `sha256 is ${digests.sha256}; expected ${expected.sha256}`,
    };
  if (expected?.sha512 && expected.sha512 !== digests.sha512)
    return {
      reason: 'ChecksumMismatch',
      message: `sha512 is ${digests.sha512}; expected ${expected.sha512}`,
    };
  return undefined;
}

/**
 * image-verify: image.uploaded → read the stored bytes back (sha256, sha512), compare with the
 * declared length and expected checksums, write `<key>.sha256sum`, mark the Image Ready (with its
 * download URL) or Failed, reply image.verified or image.failed. The event is only a pointer: the
 * Image, its key and its expectations are read from the API server. A repeat for an Image already
 * Ready or Failed for this generation ends here (204).
 */
async function verifyUploadedImage(
  context: FunctionContext<ImageVerifyConfig>,
  data: ImageUploadedData,
): Promise<HandlerResult> {
  const ref = data.image;
  const clients = kubeClients(context.kubeConfig);
  const log = context.log.child({ namespace: ref.namespace, name: ref.name });
  const image = await readImage(clients, ref.namespace, ref.name);
  if (!image || image.metadata.uid !== ref.uid) {
    log.info('the Image is gone or was replaced; ignored');
    return undefined;
  }
  const { spec, status } = image;
  if (
    (status?.phase === 'Ready' || status?.phase === 'Failed') &&
    status.observedGeneration === image.metadata.generation
  ) {
    log.debug('already verified');
    return undefined;
  }
  if (status?.phase !== 'Uploaded') {
    log.info('the upload has not finished; ignored', { phase: status?.phase });
    return undefined;
  }
  const key = imageObjectKey(spec.type, spec.owner, spec.clusterName, spec.imageName);
  const bucket = status.storage?.bucket ?? context.config.S3_BUCKET;
  if (bucket !== context.config.S3_BUCKET || (status.storage && status.storage.key !== key)) {
    log.warn('status.storage names another place than this store and spec; ignored', {
      storage: status.storage,
    });
    return undefined;
  }
  const s3 = s3For(context.config);
  const started = Date.now();
  // The deadline grows with the image (contract §12): a large image is given the time a store
  // at the configured minimum throughput needs, and progress is in status while it runs.
  const deadlineSeconds = verifyDeadlineSeconds(context.config, spec.length);
  const deadline = new Date(started + deadlineSeconds * 1000);
  const progress = (bytesVerified: number) =>
    updateImageStatus(clients, manager, ref.namespace, ref.name, (fresh) =>
      fresh.metadata.uid !== ref.uid || fresh.status?.phase !== 'Uploaded'
        ? undefined
        : {
            ...fresh.status,
            verification: {
              bytesVerified,
              totalBytes: spec.length,
              startedAt: new Date(started).toISOString(),
              deadline: deadline.toISOString(),
            },
            conditions: setCondition(fresh.status.conditions, {
              type: ImageCondition.ready,
              status: 'Unknown',
              reason: 'Verifying',
              message: `${bytesVerified} of ${spec.length} bytes verified; deadline ${deadline.toISOString()}`,
              observedGeneration: fresh.metadata.generation,
            }),
          },
    ).then(
      () => undefined,
      (error: unknown) =>
        log.warn('verification progress not recorded', { bytesVerified, error: String(error) }),
    );
  await progress(0);
  const signal = AbortSignal.timeout(deadlineSeconds * 1000);
  let digests: Digests;
  try {
    digests = await digestObject(s3, bucket, key, {
      signal,
      onProgress: progress,
      progressBytes: context.config.IMAGE_VERIFY_PROGRESS_BYTES,
    });
  } catch (error) {
    if (!signal.aborted) throw error;
    // Too slow for the size-derived deadline: said on the Image, and retried by the broker.
    const message = `Reading ${spec.length} bytes back took longer than ${deadlineSeconds} s (IMAGE_VERIFY_MIN_BYTES_PER_SECOND ${context.config.IMAGE_VERIFY_MIN_BYTES_PER_SECOND})`;
    await updateImageStatus(clients, manager, ref.namespace, ref.name, (fresh) =>
      fresh.metadata.uid !== ref.uid
        ? undefined
        : {
            ...fresh.status,
            conditions: setCondition(fresh.status?.conditions, {
              type: ImageCondition.ready,
              status: 'Unknown',
              reason: 'VerificationTimedOut',
              message,
              observedGeneration: fresh.metadata.generation,
            }),
          },
    );
    throw transient('VerificationTimedOut', message);
  }
  const seconds = (Date.now() - started) / 1000;
  const failure = mismatch(digests, spec.length, spec.expectedChecksum);
  // Signed and expiring (shared/storage/signed-url.ts): the URL is the only credential Ironic has.
  const expires = new Date(Date.now() + context.config.IMAGE_URL_TTL_SECONDS * 1000);
  const target = { namespace: ref.namespace, name: ref.name, uid: image.metadata.uid };
  const base = context.config.IMAGE_DOWNLOAD_BASE_URL;
  const keys = context.config.IMAGE_URL_KEYS;
  const url = signDownloadUrl(base, { ...target, kind: 'image' }, expires, keys);
  const checksumUrl = signDownloadUrl(base, { ...target, kind: 'checksum' }, expires, keys);
  if (!failure) await writeChecksumFile(s3, bucket, key, digests.sha256, spec.imageName);
  const stored = await updateImageStatus(clients, manager, ref.namespace, ref.name, (fresh) => {
    if (fresh.metadata.uid !== ref.uid) return undefined;
    const condition = failure
      ? { type: ImageCondition.ready, status: 'False' as const, ...failure }
      : {
          type: ImageCondition.ready,
          status: 'True' as const,
          reason: 'Verified',
          message: `sha256 ${digests.sha256}`,
        };
    return {
      ...fresh.status,
      phase: failure ? 'Failed' : 'Ready',
      sha256: digests.sha256,
      sha512: digests.sha512,
      verification: {
        bytesVerified: digests.length,
        totalBytes: spec.length,
        startedAt: new Date(started).toISOString(),
        deadline: deadline.toISOString(),
      },
      ...(failure ? {} : { url, checksumUrl, urlExpiresAt: expires.toISOString() }),
      conditions: setCondition(fresh.status?.conditions, {
        ...condition,
        observedGeneration: fresh.metadata.generation,
      }),
    };
  });
  if (!stored) return undefined;
  log.info(failure ? 'image failed verification' : 'image verified', {
    bytes: digests.length,
    seconds,
    sha256: digests.sha256,
    ...(failure ?? {}),
  });
  await recordEvent(
    clients,
    {
      object: imageIdentity(stored),
      type: failure ? 'Warning' : 'Normal',
      reason: failure?.reason ?? 'Verified',
      message: failure?.message ?? `sha256 ${digests.sha256}; served until ${expires.toISOString()}`,
      component: functionName,
    },
    log,
  );
  const subject = imageSubject(ref.namespace, ref.name);
  const cluster = { cluster: spec.clusterName };
  return failure
    ? chainEvent(
        EventTypes.imageFailed,
        functionName,
        subject,
        { image: imageRef(stored), cluster: spec.clusterName, ...failure },
        cluster,
      )
    : chainEvent(
        EventTypes.imageVerified,
        functionName,
        subject,
        {
          image: imageRef(stored),
          cluster: spec.clusterName,
          sha256: digests.sha256,
          sha512: digests.sha512,
          url,
        },
        cluster,
      );
}

export const definition: FunctionDefinition<ImageVerifyConfig> = {
  name: functionName,
  events: { [EventTypes.imageUploaded]: on(imageUploadedDataSchema, verifyUploadedImage) },
  configSchema: imageVerifyConfigSchema,
};

/** The func convention's entry point (faas-js-runtime): see shared/server/func-adapter.ts. */
export const handle = funcHandle(definition);
