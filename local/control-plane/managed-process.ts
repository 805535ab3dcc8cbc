import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A child process whose stdout and stderr go to a log file, and that can be stopped for sure. */
export interface ManagedProcess {
  readonly name: string;
  readonly pid: number;
  readonly logPath: string;
  /** Resolves when the process has exited, however that happened. */
  readonly exited: Promise<ProcessExit>;
  /** The exit once it happened, else undefined. */
  exit(): ProcessExit | undefined;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL without waiting: for synchronous `exit` handlers. */
  killNow(): void;
  /** The last `lines` lines of the log file. */
  logTail(lines?: number): string;
}

/**
 * Kills `pid` (TERM, then KILL 5 s later) once this process is gone, even when it dies of
 * SIGKILL and runs no exit handler: a detached shell polls for it every second. Without it, a
 * test runner killed hard would leave etcd and kube-apiserver running. Stopped with the child.
 */
const watchdogScript = `parent=$1; child=$2
while kill -0 "$parent" 2>/dev/null; do
  kill -0 "$child" 2>/dev/null || exit 0
  sleep 1
done
kill -TERM "$child" 2>/dev/null || exit 0
sleep 5; kill -KILL "$child" 2>/dev/null; exit 0`;

function startWatchdog(childPid: number): ChildProcess | undefined {
  try {
    const watchdog = spawn(
      'sh',
      ['-c', watchdogScript, 'bpa-watchdog', String(process.pid), String(childPid)],
      {
        detached: true,
        stdio: 'ignore',
      },
    );
    watchdog.on('error', () => undefined);
    watchdog.unref();
    return watchdog;
  } catch {
    return undefined;
  }
}

export function startManagedProcess(
  name: string,
  command: string,
  args: string[],
  logPath: string,
): ManagedProcess {
  const logFd = openSync(logPath, 'a');
  const child = (() => {
    try {
      return spawn(command, args, { stdio: ['ignore', logFd, logFd], env: process.env });
    } finally {
      // The child has its own copy of the descriptor.
      closeSync(logFd);
    }
  })();
  const watchdog = child.pid === undefined ? undefined : startWatchdog(child.pid);
  let exitInfo: ProcessExit | undefined;
  let spawnError: string | undefined;
  const exited = new Promise<ProcessExit>((resolve) => {
    child.once('exit', (code, signal) => {
      exitInfo = { code, signal };
      watchdog?.kill();
      resolve(exitInfo);
    });
    child.once('error', (error) => {
      // spawn failed (binary missing, not executable): there is no process to wait for.
      exitInfo = { code: -1, signal: null };
      spawnError = error.message;
      resolve(exitInfo);
    });
  });
  const logTail = (lines = 40) => {
    try {
      const text = readFileSync(logPath, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
      return spawnError ? `${spawnError}\n${text}` : text;
    } catch {
      return spawnError ?? '(no log)';
    }
  };
  return {
    name,
    pid: child.pid ?? -1,
    logPath,
    exited,
    exit: () => exitInfo,
    logTail,
    killNow: () => {
      watchdog?.kill();
      if (!exitInfo) child.kill('SIGKILL');
    },
    stop: async (graceMs = 10_000) => {
      if (exitInfo) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      try {
        await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
