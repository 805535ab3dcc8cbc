import { setTimeout as sleep } from 'node:timers/promises';
import { describeError } from '../../shared/errors.js';

export interface WaitOptions {
  /** What is awaited, for the timeout message. */
  what: string;
  timeoutMs: number;
  intervalMs?: number;
  /** Checked before each attempt: a non-empty string aborts the wait with that message. */
  abortIf?: () => string | undefined;
}

/**
 * Polls `check` until it returns a value other than undefined, then returns it. Errors thrown by
 * `check` count as "not yet" and the last one is reported on timeout.
 */
export async function waitFor<T>(check: () => Promise<T | undefined>, options: WaitOptions): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  const interval = options.intervalMs ?? 100;
  let lastProblem = 'no answer yet';
  for (;;) {
    const abort = options.abortIf?.();
    if (abort) throw new Error(`${options.what}: ${abort}`);
    try {
      // A check that never settles (a request stuck on a loaded machine) must not outlive the deadline.
      const attemptMs = Math.max(1000, Math.min(10_000, deadline - Date.now()));
      const value = await withTimeout(check(), attemptMs);
      if (value !== undefined) return value;
    } catch (error) {
      lastProblem = describeError(error).message;
    }
    if (Date.now() >= deadline) {
      throw new Error(`timed out after ${options.timeoutMs} ms waiting for ${options.what} (${lastProblem})`);
    }
    await sleep(interval);
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}
