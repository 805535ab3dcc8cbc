import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import {
  hostImageAnnotation,
  hostImageFor,
  planHostImage,
  type HostImage,
} from '../../shared/core/host-image.js';
import type { ClaimOwner } from '../../shared/core/host-claim.js';
import { BpaError, transient } from '../../shared/errors.js';
import { Reason, type ConditionReason } from '../../shared/reasons.js';
import { imageSchema, type Image } from '../../shared/schemas/image.js';
import { describeIssues } from '../../shared/schemas/issues.js';
import { classifyApiError, isConflict, isNotFound } from '../../shared/k8s/api-errors.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { getCustomObject } from '../../shared/k8s/custom-objects.js';
import { imagesResource } from '../../shared/k8s/image.js';
import { bareMetalHostsResource } from '../../shared/k8s/resources.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';

/**
 * Issue 12 item 5: a Provisioning that names an Image (`spec.image.name`) gets it written to
 * each of its BareMetalHosts as Metal3's `spec.image`, but only where the host has no image or
 * one this project wrote (annotation bpa.akraino.org/image); someone else's image is never
 * overwritten, only reported. The Image is read live and must be Ready; nothing is written
 * otherwise.
 */

/** What happened to the hosts: written on status.image. */
export interface HostImageReport {
  name: string;
  url: string;
  sha256: string;
  /** `<namespace>/<name>` of the hosts that have the image now (written or already there). */
  hosts: string[];
  /** Hosts that keep an image this project did not write (or that this Provisioning does not hold). */
  foreignHosts: string[];
}

export type HostImageOutcome =
  { kind: 'applied'; report: HostImageReport } | { kind: 'failed'; reason: ConditionReason; message: string };

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
/** Conflicting writers (Metal3's own controller updates hosts often): read and plan again. */
const conflictAttempts = 4;

/** Reads the Image `name` in `namespace`: the HostImage for it, or why there is none. */
export async function imageForHosts(
  clients: KubeClients,
  namespace: string,
  name: string,
): Promise<
  | { kind: 'ready'; image: Image; hostImage: HostImage }
  | { kind: 'failed'; reason: ConditionReason; message: string }
> {
  const raw = await getCustomObject(clients, { resource: imagesResource, namespace, name });
  if (!raw)
    return {
      kind: 'failed',
      reason: Reason.ImageNotFound,
      message: `Image ${namespace}/${name} named by spec.image does not exist; upload it (docs/images.md), the sweep retries`,
    };
  const parsed = imageSchema.safeParse(raw);
  if (!parsed.success)
    return {
      kind: 'failed',
      reason: Reason.ImageNotReady,
      message: `Image ${namespace}/${name} is not a valid Image: ${describeIssues(parsed.error)}`,
    };
  try {
    return { kind: 'ready', image: parsed.data, hostImage: hostImageFor(parsed.data) };
  } catch (error) {
    if (error instanceof BpaError)
      return { kind: 'failed', reason: Reason.ImageNotReady, message: error.message };
    throw error;
  }
}

/**
 * Writes `hostImage` to each host (`<namespace>/<name>`) that `owner` holds by spec.consumerRef
 * (claimed just before: shared/k8s/host-claims.ts) where planHostImage allows it, with a
 * merge patch that carries the read resourceVersion (a concurrent writer fails it with 409 and
 * the host is read and planned again). Idempotent: a host that has the image is left alone.
 */
export async function applyHostImages(
  clients: KubeClients,
  image: { namespace: string; name: string },
  hostImage: HostImage,
  hosts: readonly string[],
  owner: ClaimOwner,
): Promise<HostImageReport> {
  const report: HostImageReport = {
    name: image.name,
    url: hostImage.url,
    sha256: hostImage.checksum,
    hosts: [],
    foreignHosts: [],
  };
  for (const host of [...new Set(hosts)]) {
    const outcome = await applyToHost(clients, host, hostImage, `${image.namespace}/${image.name}`, owner);
    (outcome === 'foreign' || outcome === 'not-owned' ? report.foreignHosts : report.hosts).push(host);
  }
  return report;
}

async function applyToHost(
  clients: KubeClients,
  host: string,
  hostImage: HostImage,
  annotation: string,
  owner: ClaimOwner,
): Promise<'written' | 'unchanged' | 'foreign' | 'not-owned'> {
  const [namespace = '', name = ''] = host.split('/');
  const target = { resource: bareMetalHostsResource, namespace, name };
  for (let attempt = 1; ; attempt++) {
    const live = await getCustomObject(clients, target);
    if (!live) throw hostGone(host);
    // Read again: the claim's precondition was the index's copy; spec.image is not indexed.
    const plan = planHostImage(live as Parameters<typeof planHostImage>[0], hostImage, owner);
    if (plan !== 'write') return plan;
    try {
      await clients.custom.patchNamespacedCustomObject(
        { ...bareMetalHostsResource, namespace, name, body: imagePatch(live, hostImage, annotation) },
        mergePatch,
      );
      return 'written';
    } catch (error) {
      if (isNotFound(error)) throw hostGone(host);
      if (!isConflict(error) || attempt >= conflictAttempts)
        throw classifyApiError(error, `write spec.image of BareMetalHost ${host}`);
    }
  }
}

/** spec.image whole (a field the Image lacks is removed) and the annotation that marks it ours. */
function imagePatch(live: StoredObject, hostImage: HostImage, annotation: string) {
  return {
    metadata: {
      resourceVersion: live.metadata.resourceVersion,
      annotations: { [hostImageAnnotation]: annotation },
    },
    spec: {
      image: {
        url: hostImage.url,
        checksum: hostImage.checksum,
        checksumType: hostImage.checksumType,
        format: hostImage.format ?? null,
      },
    },
  };
}

// The host was resolved a moment ago: a deletion since is retried (Unknown), and the next
// resolution no longer finds it.
const hostGone = (host: string) =>
  transient('HostGone', `BareMetalHost ${host} was deleted while its image was being written`);
