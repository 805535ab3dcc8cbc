import { BpaError } from '../../shared/errors.js';
import { Reason, type ConditionReason } from '../../shared/reasons.js';
import type { Failure } from '../../shared/k8s/step-report.js';

/** API answers that retrying the same request cannot change (RBAC, admission, validation). */
const refusedStatuses = new Set([400, 403, 422]);

/**
 * The failure a step reports, rather than retries, for what a write of its objects threw: an
 * object in the way that the functions did not create (ObjectConflict), or, where the step names
 * a reason for it (`apiRefused`), the API server's refusal (400, 403, 422). Undefined for anything
 * else, which the caller throws again.
 */
export function refusalOf(error: unknown, step: string, apiRefused?: ConditionReason): Failure | undefined {
  if (!(error instanceof BpaError)) return undefined;
  if (error.reason === Reason.ObjectConflict)
    return { step, reason: Reason.ObjectConflict, message: error.message };
  const status = error.details?.status;
  if (apiRefused && typeof status === 'number' && refusedStatuses.has(status))
    return { step, reason: apiRefused, message: error.message };
  return undefined;
}
