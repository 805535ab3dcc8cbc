import type { V1ObjectMeta } from '@kubernetes/client-node';
import { ownershipRecordingGraceSeconds } from '../../shared/core/ownership.js';

/**
 * Waits until an object is older than the ownership grace (shared/core/ownership.ts): until
 * then an unrecorded object of a name the chain writes may be a concurrent delivery's own, so a
 * step answers a transient OwnershipPending (the broker retries it); after it, the object is a
 * look-alike and the step reports ObjectConflict. Suites that plant a look-alike and deliver the
 * step once (no broker retries) wait with this first.
 */
export async function pastOwnershipGrace(metadata: V1ObjectMeta | undefined): Promise<void> {
  const created = metadata?.creationTimestamp ? new Date(metadata.creationTimestamp).getTime() : Date.now();
  // creationTimestamp is whole seconds (truncated): waiting from it never waits too little.
  const wait = created + ownershipRecordingGraceSeconds * 1000 + 250 - Date.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
}
