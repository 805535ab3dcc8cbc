import type { V1Job } from '@kubernetes/client-node';
import { launchHashAnnotation, launchRetryAnnotation } from '../../shared/core/lifecycle-names.js';
import { isOwnedBy } from '../../shared/core/ownership.js';
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
  /** Not created by the functions for this Provisioning: never touched (ObjectConflict). */
  | 'conflict';

export const jobLaunchHash = (job: V1Job) => job.metadata?.annotations?.[launchHashAnnotation];
export const jobRetryOf = (job: V1Job) => job.metadata?.annotations?.[launchRetryAnnotation] ?? '';

/**
 * Contract section 5 with section 10: same launch hash → the existing Job is the launch
 * (a failed one too, unless the user asked for a retry or the spec changed since); another
 * hash → replaced once finished, left alone while it runs; a Job the functions did not create
 * for this Provisioning → never adopted.
 */
export function decideLaunch(existing: V1Job | undefined, wanted: WantedLaunch): LaunchDecision {
  if (!existing) return 'create';
  if (!isOwnedBy(existing.metadata, { uid: wanted.ownerUid })) return 'conflict';
  const state = jobState(existing);
  if (jobLaunchHash(existing) === wanted.launchHash) {
    if (state !== 'failed') return 'exists';
    const olderGeneration = (jobProvisioningGeneration(existing) ?? 0) < wanted.generation;
    const retried = jobRetryOf(existing) !== wanted.retry;
    return olderGeneration || retried ? 'replace' : 'exists';
  }
  return state === 'running' ? 'blocked' : 'replace';
}
