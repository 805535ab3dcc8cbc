/**
 * The Image's status by server-side apply (shared/k8s/image.ts imageStatusDecision): image-upload
 * and image-verify say the whole status they want; what differs from the live one is what their
 * manager applies, and kstatus follows the Image's own stall rule (Failed only). The API
 * server's side is test/integration/images/ (uploads and verification through real S3 and the
 * real API server).
 */
import { describe, expect, it } from '@jest/globals';
import { imageStatusDecision, type StoredImage } from '../../../shared/k8s/image.js';
import { applyBody } from '../../../shared/k8s/status-apply.js';
import type { StoredObject } from '../../../shared/k8s/stored-object.js';
import type { ImageStatus } from '../../../shared/schemas/image.js';

const at = '2026-01-01T00:00:00Z';
const live: StoredImage = {
  apiVersion: 'bpa.akraino.org/v1alpha1',
  kind: 'Image',
  metadata: { name: 'i', namespace: 'n', uid: 'u', generation: 1, resourceVersion: '5' },
  spec: {
    clusterName: 'c',
    owner: 'alice',
    type: 'os',
    imageName: 'disk.img',
    length: 10,
  },
  status: {
    observedGeneration: 1,
    phase: 'Uploaded',
    uploadOffset: 10,
    uploadLength: 10,
    conditions: [
      {
        type: 'Uploaded',
        status: 'True',
        reason: 'Uploaded',
        message: 'stored',
        lastTransitionTime: at,
        observedGeneration: 1,
      },
      {
        type: 'Ready',
        status: 'Unknown',
        reason: 'Verifying',
        message: 'waiting',
        lastTransitionTime: at,
        observedGeneration: 1,
      },
      {
        type: 'Reconciling',
        status: 'True',
        reason: 'Verifying',
        message: 'waiting',
        lastTransitionTime: at,
        observedGeneration: 1,
      },
    ],
  },
} as StoredImage;

const conditionsOf = (status: ImageStatus | undefined) => status?.conditions ?? [];

describe('imageStatusDecision', () => {
  it('applies only what changed: the verified fields and the Ready condition, not Uploaded', () => {
    const wanted: ImageStatus = {
      ...live.status,
      phase: 'Ready',
      sha256: 'a'.repeat(64),
      conditions: conditionsOf(live.status).map((c) =>
        c.type === 'Ready' ? { ...c, status: 'True', reason: 'Verified', message: 'sha256 aaa' } : c,
      ),
    };
    expect(imageStatusDecision(live, wanted)).toMatchObject({
      fields: { phase: 'Ready', sha256: 'a'.repeat(64) },
      conditions: [
        { type: 'Ready', status: 'True', reason: 'Verified', message: 'sha256 aaa', observedGeneration: 1 },
      ],
    });
    expect(imageStatusDecision(live, wanted)?.removeConditions).toBeUndefined();
  });

  it('decides nothing when the wanted status is the live one', () => {
    expect(imageStatusDecision(live, { ...live.status })).toBeUndefined();
  });

  it('drops a field the wanted status lacks, and never takes observedGeneration or kstatus from it', () => {
    const { uploadOffset: _dropped, ...rest } = live.status ?? {};
    const decision = imageStatusDecision(live, { ...rest, observedGeneration: 99 });
    expect(decision?.fields).toEqual({ uploadOffset: undefined });
    expect(decision?.conditions).toEqual([]);
  });

  it('stalls only a Failed Image (kstatus Stalled), and leaves an upload in flight Reconciling', () => {
    const failed: ImageStatus = {
      ...live.status,
      phase: 'Failed',
      conditions: conditionsOf(live.status).map((c) =>
        c.type === 'Ready' ? { ...c, status: 'False', reason: 'ChecksumMismatch', message: 'no match' } : c,
      ),
    };
    const decision = imageStatusDecision(live, failed);
    const applied = applyBody(live as StoredObject, { manager: 'bpa-image-verify', ...decision! });
    const types = (applied.status.conditions as { type: string }[]).map((c) => c.type);
    expect(types).toContain('Stalled');
    expect(applied.remove).toEqual(['Reconciling']);

    // An upload in flight is Ready=False with a reason of the Image's own (not the chain's
    // catalogue, where an unknown False reason would be a stall): Reconciling, never Stalled.
    const uploading = imageStatusDecision(live, {
      ...live.status,
      phase: 'Uploading',
      conditions: conditionsOf(live.status).map((c) =>
        c.type === 'Ready' ? { ...c, status: 'False', reason: 'Uploading', message: 'not finished' } : c,
      ),
    });
    const progress = applyBody(live as StoredObject, { manager: 'bpa-image-upload', ...uploading! });
    const kstatus = (progress.status.conditions as { type: string }[]).map((c) => c.type);
    expect(kstatus).toContain('Reconciling');
    expect(kstatus).not.toContain('Stalled');
    expect(progress.remove).toEqual([]);
  });
});
