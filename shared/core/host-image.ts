import { BpaError } from '../errors.js';
import type { ConsumerRef } from '../schemas/bare-metal-host.js';
import type { Image } from '../schemas/image.js';
import { judgeHostClaim, type ClaimOwner } from './host-claim.js';

/**
 * Issue 12 item 5 (a Provisioning naming an Image; its hosts get `spec.image`): what a
 * BareMetalHost's spec.image becomes for a Ready Image, and whether this project may write it.
 * host-lookup applies them (functions/host-lookup/host-images.ts, docs/images.md).
 */

/** Set on a BareMetalHost whose spec.image this project wrote: `<namespace>/<Image name>`. */
export const hostImageAnnotation = 'bpa.akraino.org/image';

/** Metal3's BareMetalHost spec.image, as this project writes it. */
export interface HostImage {
  url: string;
  checksum: string;
  checksumType: 'sha256';
  format?: NonNullable<Image['spec']['format']>;
}

/** spec.image for a Ready Image whose signed URL still works; an ImageNotReady error (a resolution failure) otherwise. */
export function hostImageFor(image: Image, now: Date = new Date()): HostImage {
  const status = image.status;
  if (status?.phase !== 'Ready' || !status.url || !status.sha256)
    throw new BpaError(
      'ImageNotReady',
      `Image ${image.metadata.namespace ?? ''}/${image.metadata.name} is ${status?.phase ?? 'Pending'}, not Ready: it cannot be provisioned yet`,
    );
  // status.url is signed and expires (docs/images.md): a host never gets a URL that no longer works.
  if (status.urlExpiresAt && Date.parse(status.urlExpiresAt) <= now.getTime())
    throw new BpaError(
      'ImageNotReady',
      `Image ${image.metadata.namespace ?? ''}/${image.metadata.name}'s download URL expired at ${status.urlExpiresAt}: it cannot be provisioned until the URL is renewed`,
    );
  return {
    url: status.url,
    checksum: status.sha256,
    checksumType: 'sha256',
    ...(image.spec.format ? { format: image.spec.format } : {}),
  };
}

export type HostImagePlan =
  /** The host already has exactly this image. */
  | 'unchanged'
  /** Unset, or set earlier by this project: write it (and the annotation). */
  | 'write'
  /** Someone else's image: never overwritten. */
  | 'foreign'
  /** The host is not claimed by this Provisioning (spec.consumerRef): nothing is written. */
  | 'not-owned';

/**
 * Whether a host's spec.image may become `desired` for `owner`: only on a host whose
 * spec.consumerRef names `owner` (contract section 12: the annotation alone proves nothing, any
 * Provisioning's image carries it), and there only where the image is unset or ours.
 */
export function planHostImage(
  host: {
    metadata: { annotations?: Record<string, string> };
    spec?: { image?: Partial<HostImage> | null; consumerRef?: ConsumerRef | null };
  },
  desired: HostImage,
  owner: ClaimOwner,
): HostImagePlan {
  if (judgeHostClaim(host.spec?.consumerRef, owner).kind !== 'mine') return 'not-owned';
  const current = host.spec?.image;
  if (
    current &&
    current.url === desired.url &&
    current.checksum === desired.checksum &&
    current.checksumType === desired.checksumType &&
    current.format === desired.format
  )
    return 'unchanged';
  if (!current?.url) return 'write';
  return host.metadata.annotations?.[hostImageAnnotation] ? 'write' : 'foreign';
}
