/** What a long-running `bpa` command waits on before it stops what it started. */
export interface StopCause {
  /** The signal that asked us to stop (SIGINT, SIGTERM). */
  signal?: NodeJS.Signals;
  /** What died on its own (`exited` resolved with it). */
  died?: string;
}

/**
 * Resolves with the signal that asked us to stop, or the exit of a process that died: whichever
 * comes first. Its signal handlers are removed once it resolves.
 */
export function untilStopped(exited: Promise<string>): Promise<StopCause> {
  return new Promise((resolveStop) => {
    const onSignal = (signal: NodeJS.Signals) => finish({ signal });
    const finish = (outcome: StopCause) => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      resolveStop(outcome);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    void exited.then((died) => finish({ died }));
  });
}
