/** Default number of hosts worked on at once (contract: SSH_CONCURRENCY, default 32). */
export const defaultConcurrency = 32;

/**
 * Runs `job` for every item with at most `limit` running at once. Results keep the order of
 * `items`; a job that throws or rejects only marks its own result as rejected.
 */
export async function runWithConcurrency<T, R>(
  items: readonly T[],
  job: (item: T, index: number) => Promise<R>,
  limit: number = defaultConcurrency,
): Promise<PromiseSettledResult<R>[]> {
  if (!Number.isInteger(limit) || limit < 1)
    throw new RangeError(`concurrency must be a positive integer, got ${limit}`);
  const results = new Array<PromiseSettledResult<R>>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      try {
        results[index] = { status: 'fulfilled', value: await job(items[index] as T, index) };
      } catch (reason) {
        results[index] = { status: 'rejected', reason };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
