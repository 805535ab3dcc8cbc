import type { V1Job } from '@kubernetes/client-node';
import { launchHashAnnotation, launchRetryAnnotation } from '../../shared/core/lifecycle-names.js';
import { carriesOwnerUid } from '../../shared/core/ownership.js';
import { managedByLabel, managedByValue } from '../../shared/core/names.js';
import { jobProvisioningGeneration } from './job-state.js';
import { jobState } from '../../shared/k8s/jobs.js';

/** What the launcher wants: the Job's launch hash, for which generation and retry request. */
export interface WantedLaunch {
  launchHash: string;
  generation: number;
  /** The `bpa.akraino.org/retry` value being acted on ('' when none). */
  retry: string;
  ownerUid: string;
}

export type LaunchDecision =
  /** No Job of that name: create it. */
  | 'create'
  /** The Job for exactly this launch exists (running or finished): that is the launch. */
  | 'exists'
  /** Ours, finished, and not this launch (another hash, or a retry of a failed one): replace. */
  | 'replace'
  /** Ours, still running another launch: reported, left alone, replaced once it finishes. */
  | 'blocked'
  /** Not created by the functions (an operator's Job in their namespace): never touched (ObjectConflict). */
  | 'conflict';

export const jobLaunchHash = (job: V1Job) => job.metadata?.annotations?.[launchHashAnnotation];
export const jobRetryOf = (job: V1Job) => job.metadata?.annotations?.[launchRetryAnnotation] ?? '';

/**
 * Contract section 5 with section 10: same launch hash → the existing Job is the launch
 * (a failed one too, unless the user asked for a retry or the spec changed since); another
 * hash → replaced once finished, left alone while it runs; a Job the functions did not create
 * → never adopted. The Job is read in the functions' namespace only, which tenants cannot write
 * (contract section 12): a `kud-<cluster>` Job a tenant makes in its own namespace is never read.
 * There, a Job the functions made for another Provisioning of the same cluster name (one deleted
 * or renamed away, whose cleanup gave up) is another launch: replaced once finished, never the
 * launch itself, whatever hash it carries.
 */
export function decideLaunch(existing: V1Job | undefined, wanted: WantedLaunch): LaunchDecision {
  if (!existing) return 'create';
  if (existing.metadata?.labels?.[managedByLabel] !== managedByValue) return 'conflict';
  const state = jobState(existing);
  if (!carriesOwnerUid(existing.metadata, wanted.ownerUid))
    return state === 'running' ? 'blocked' : 'replace';
  if (jobLaunchHash(existing) === wanted.launchHash) {
    if (state !== 'failed') return 'exists';
    const olderGeneration = (jobProvisioningGeneration(existing) ?? 0) < wanted.generation;
    const retried = jobRetryOf(existing) !== wanted.retry;
    return olderGeneration || retried ? 'replace' : 'exists';
  }
  return state === 'running' ? 'blocked' : 'replace';
}
