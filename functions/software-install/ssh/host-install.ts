import type { Logger } from '../../../shared/log.js';
import { silentLogger } from '../../../shared/log.js';
import { describeError } from '../../../shared/errors.js';
import { defaultConcurrency, runWithConcurrency } from './fanout.js';
import {
  installOneHost,
  internalErrorResult,
  type HostInstallResult,
  type InstallRunOptions,
  type PlannedHostInstall,
} from './install.js';
import type { SshCommandResult, SshErrorReason } from './session.js';

/**
 * One host's install as the install Job runs it (contract section 11): hold the host's Lease (one
 * apt at a time per host), run the install detached on the host and poll it to its end
 * (ssh/detached.ts), release; a timeout leaves apt running and the next attempt attaches to it
 * (never a second apt); a failure that another attempt can fix is
 * retried with exponential backoff (the Lease is not held while waiting), up to `attempts`.
 */

/** Failures no retry can fix: a wrong host key must never be retried into acceptance, a refused key stays refused. */
const finalReasons: ReadonlySet<SshErrorReason> = new Set([
  'InvalidSessionOptions',
  'HostKeyUnknown',
  'HostKeyChanged',
  'HostKeyRevoked',
  'AuthenticationFailed',
  // The installer stopped polling (Software deleted, pod stopping): nothing left to retry for.
  'PollingStopped',
]);

export const isRetryable = (result: SshCommandResult) =>
  result.error !== undefined && !finalReasons.has(result.error.reason);

export interface RetryPolicy {
  /** Attempts in all, the first included (contract: three by default). */
  attempts: number;
  /** Delay before the second attempt; doubled for each next one, capped at maxDelayMs. */
  baseDelayMs: number;
  maxDelayMs: number;
}

export const defaultRetryPolicy: RetryPolicy = { attempts: 3, baseDelayMs: 5000, maxDelayMs: 60000 };

/** Pure: the wait before attempt `attempt` (2, 3, ...), with ±20% jitter from `random`. */
export function backoffDelayMs(
  policy: RetryPolicy,
  attempt: number,
  random: () => number = Math.random,
): number {
  const base = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attempt - 2));
  return Math.round(base * (0.8 + 0.4 * random()));
}

/** Something that serialises work per host: HostLeases, or a test's own. */
export interface HostLock {
  acquire(ip: string): Promise<{ release(): Promise<void>; waitedMs?: number }>;
}

export type RetriedHostResult = HostInstallResult & {
  /** Attempts made (1 when the first succeeded or could not be retried). */
  attempts: number;
  /** Time spent waiting for the host's Lease, all attempts together. */
  leaseWaitMs: number;
};

export interface RetriedInstallOptions extends InstallRunOptions {
  lock: HostLock;
  retry?: RetryPolicy;
  /** Called after each failed attempt that will be retried (for Events and logs). */
  onRetry?: (host: PlannedHostInstall, attempt: number, result: SshCommandResult, delayMs: number) => void;
}

async function installOnHost(
  host: PlannedHostInstall,
  options: RetriedInstallOptions,
  log: Logger,
): Promise<RetriedHostResult> {
  const retry = options.retry ?? defaultRetryPolicy;
  let leaseWaitMs = 0;
  for (let attempt = 1; ; attempt++) {
    const startedAt = new Date().toISOString();
    let result: SshCommandResult;
    let lease: Awaited<ReturnType<HostLock['acquire']>> | undefined;
    try {
      lease = await options.lock.acquire(host.ip);
      leaseWaitMs += lease.waitedMs ?? 0;
      result = await installOneHost(options, host);
    } catch (error) {
      // The Lease could not be had (busy past the wait, API down): retried like a host fault.
      const { reason, message } = describeError(error);
      result = {
        exitCode: null,
        error: { reason: 'SessionClosed', message: `${reason}: ${message}` },
        stdoutTail: [],
        stderrTail: [],
        durationMs: 0,
      };
    } finally {
      await lease?.release().catch(() => undefined);
    }
    const done = { ...host, ...result, startedAt, attempts: attempt, leaseWaitMs };
    if (!isRetryable(result) || attempt >= retry.attempts || options.signal?.aborted) return done;
    const delayMs = backoffDelayMs(retry, attempt + 1);
    log.warn('host install failed; retrying', {
      node: host.node,
      ip: host.ip,
      attempt,
      of: retry.attempts,
      delayMs,
      reason: result.error?.reason,
    });
    options.onRetry?.(host, attempt, result, delayMs);
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    if (options.signal?.aborted) return done;
  }
}

/** Every planned host, in parallel up to the limit, each under its Lease and with retries. */
export async function runRetriedInstall(options: RetriedInstallOptions): Promise<RetriedHostResult[]> {
  const log = options.logger ?? silentLogger;
  const settled = await runWithConcurrency(
    options.hosts,
    (host) => installOnHost(host, options, log.child({ node: host.node, ip: host.ip })),
    options.concurrency ?? defaultConcurrency,
  );
  return settled.map((outcome, index) =>
    outcome.status === 'fulfilled'
      ? outcome.value
      : {
          ...internalErrorResult(options.hosts[index] as PlannedHostInstall, outcome.reason),
          attempts: 1,
          leaseWaitMs: 0,
        },
  );
}
