/** Polls `probe` until it returns a defined value; rejects after `timeoutMs` naming `what`. */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 120_000,
  intervalMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${lastError ? `: ${String(lastError)}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
