import type { ChildProcess } from 'node:child_process';

/** Collects a child's stdout and stderr and lets a test wait for a line matching a pattern. */
export class ProcessOutput {
  stdout = '';
  stderr = '';
  private readonly waiters: { pattern: RegExp; resolve: (match: RegExpMatchArray) => void }[] = [];

  constructor(private readonly child: ChildProcess) {
    child.stdout?.on('data', (chunk: Buffer) => {
      this.stdout += chunk.toString();
      this.check();
    });
    child.stderr?.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
  }

  /** Resolves with the first match in stdout; rejects on exit or after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
    const found = this.stdout.match(pattern);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const fail = (why: string) =>
        reject(
          new Error(
            `${why} waiting for ${pattern}\n--- stdout ---\n${this.stdout}\n--- stderr ---\n${this.stderr}`,
          ),
        );
      const timer = setTimeout(() => fail(`timed out after ${timeoutMs} ms`), timeoutMs);
      const onExit = (code: number | null) => {
        clearTimeout(timer);
        fail(`process exited (${code})`);
      };
      this.child.once('exit', onExit);
      this.waiters.push({
        pattern,
        resolve: (match) => {
          clearTimeout(timer);
          this.child.off('exit', onExit);
          resolve(match);
        },
      });
    });
  }

  private check(): void {
    for (const waiter of [...this.waiters]) {
      const match = this.stdout.match(waiter.pattern);
      if (match) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve(match);
      }
    }
  }
}
