import {
  ownershipError,
  ownershipPendingReason,
  ownershipRecordingGraceSeconds,
  type Ownership,
} from '../../../shared/core/ownership.js';
import { Reason } from '../../../shared/reasons.js';

/**
 * Ownership by uid (contract section 12) and the window between a delivery's create and its
 * status write: an unrecorded object that a concurrent delivery may have just created is a
 * transient wait, an older one a look-alike.
 */
describe('ownershipError', () => {
  const now = new Date('2026-12-02T10:00:00Z');
  const ownership: Ownership = {
    owner: { namespace: 'alpha', name: 'edge', uid: 'p-1' },
    owned: [{ kind: 'ConfigMap', namespace: 'alpha', name: 'edge-configmap', uid: 'cm-1' }],
  };
  const stored = (uid: string, secondsAgo: number) => ({
    metadata: {
      namespace: 'alpha',
      name: 'edge-configmap',
      uid,
      creationTimestamp: new Date(now.getTime() - secondsAgo * 1000),
    },
  });

  it('lets the recorded object (and an absent one) be written', () => {
    expect(ownershipError('ConfigMap', stored('cm-1', 3600), ownership, now)).toBeUndefined();
    expect(ownershipError('ConfigMap', undefined, ownership, now)).toBeUndefined();
  });

  it('waits (transient OwnershipPending) on an unrecorded object younger than the grace', () => {
    const error = ownershipError('ConfigMap', stored('cm-2', 2), ownership, now);
    expect(error).toMatchObject({ reason: ownershipPendingReason, kind: 'transient' });
    expect(error?.message).toContain('ConfigMap alpha/edge-configmap was created 2 s ago');
    expect(error?.message).toContain('Provisioning alpha/edge');
  });

  it('calls an unrecorded object older than the grace a look-alike (ObjectConflict)', () => {
    const error = ownershipError('ConfigMap', stored('cm-2', ownershipRecordingGraceSeconds), ownership, now);
    expect(error).toMatchObject({ reason: Reason.ObjectConflict, kind: 'resolution' });
    expect(error?.message).toContain('was not created by bpa-functions for Provisioning alpha/edge');
  });

  it('calls an unrecorded object without a creation time a look-alike', () => {
    const { creationTimestamp: _ignored, ...metadata } = stored('cm-2', 0).metadata;
    expect(ownershipError('ConfigMap', { metadata }, ownership, now)?.reason).toBe(Reason.ObjectConflict);
  });
});
