import type { ResolvedDelivery } from './load-config.js';

/**
 * knative/eventing `kncloudevents.SelectiveRetry`: connection errors (no status), 5xx, 404, 408,
 * 409 and 429 are retried; 3xx and every other 4xx are final.
 */
export function isRetryable(status: number | null): boolean {
  if (status === null) return true;
  return status >= 500 || status === 404 || status === 408 || status === 409 || status === 429;
}

/**
 * Wait before retry number `retry` (1 = the first retry). Knative computes the backoff with a
 * zero-based attempt number (go-retryablehttp passes 0 before the first retry):
 * exponential = delay·2^(retry−1) → delay, 2·delay, 4·delay…;
 * linear = delay·(retry−1) → 0, delay, 2·delay… (the first retry of a linear policy does not wait).
 * Without both a policy and a delay, retries happen at once.
 */
export function backoffMs(
  delivery: Pick<ResolvedDelivery, 'backoffPolicy' | 'backoffDelayMs'>,
  retry: number,
): number {
  const { backoffPolicy, backoffDelayMs } = delivery;
  if (!backoffPolicy || backoffDelayMs === undefined || retry < 1) return 0;
  const attemptNum = retry - 1;
  return backoffPolicy === 'exponential' ? backoffDelayMs * 2 ** attemptNum : backoffDelayMs * attemptNum;
}
