import { createHash } from 'node:crypto';
import { installScript, shellQuote } from './command.js';
import { runSshCommand, type SshCommandResult, type SshSessionOptions } from './session.js';

/**
 * apt is never killed in the middle of dpkg (contract section 12): the install runs detached on
 * the host, in its own session (`setsid`; a transient unit of `systemd-run` where systemd runs the
 * host), with its output and exit status written to files of a per-install directory
 * `/var/lib/bpa-functions/installs/<id>`. The SSH session that started it returns at once; the
 * installer then polls the directory over new short sessions until the exit status is there.
 *
 * So nothing the installer does or suffers reaches dpkg: an SSH timeout, a dropped connection, the
 * install Job's pod being deleted with its Software, ends the polling (and is reported), while the
 * install runs to its end. A second installer for the same host and install (the Job's next pod, a
 * retry, a re-run Job of the same generation) finds the one still running and polls it instead of
 * starting another; one that ended is started anew (a retry of a failed install re-runs apt).
 *
 * Files of the directory: `install.sh` (the install script, constant but for the lock timeout),
 * `run.sh` (the detached wrapper), `pid`, `out`, `err`, `exit` (written last, atomically).
 */

export const installsDirectory = '/var/lib/bpa-functions/installs';

/**
 * The id of one install on one host: the same for every installer of the same Software
 * generation's packages on that host (so a second one attaches), different for anything else.
 * 24 hex digits: a file name no shell reads twice.
 */
export function installId(key: string, ip: string, words: readonly string[]): string {
  return createHash('sha256')
    .update([key, ip, ...words].join('\u0000'))
    .digest('hex')
    .slice(0, 24);
}

/** The wrapper the detached process runs: records its pid, runs the install, records its exit. */
const wrapperScript = [
  'd=$1; shift',
  'echo $$ > "$d/pid.tmp" && mv "$d/pid.tmp" "$d/pid"',
  'sh "$d/install.sh" "$@" < /dev/null > "$d/out" 2> "$d/err"',
  'echo $? > "$d/exit.tmp" && mv "$d/exit.tmp" "$d/exit"',
].join('\n');

/** True (exit 0) when the install of directory "$d" still runs: its pid is alive and is our wrapper. */
const aliveTest =
  '[ -f "$d/pid" ] && [ ! -f "$d/exit" ] && p=$(cat "$d/pid") && kill -0 "$p" 2>/dev/null && ' +
  '{ [ ! -r "/proc/$p/cmdline" ] || grep -qa "$d/run.sh" "/proc/$p/cmdline"; }';

/** What the start script prints on stdout when it attached to an install already running. */
export const attachedNotice = 'bpa-functions: attached to the install already running';
export const startedNotice = 'bpa-functions: started the install';

/**
 * The start script ($1: id, $2: install script text, then the package words). Starts the install
 * detached unless one of that id runs; returns once its pid is recorded. Exit 125: could not start.
 */
export const startScript = [
  `d=${installsDirectory}/$1; s=$2; shift 2`,
  `if ${aliveTest}; then echo "${attachedNotice} ($d, pid $p)"; exit 0; fi`,
  `rm -rf "$d" && mkdir -p "$d" && chmod 700 "$d" || exit 125`,
  `printf '%s\\n' "$s" > "$d/install.sh" && printf '%s\\n' ${shellQuote(wrapperScript)} > "$d/run.sh" || exit 125`,
  'if [ -d /run/systemd/system ] && command -v systemd-run > /dev/null 2>&1; then',
  '  systemd-run --quiet --collect --unit="bpa-install-${d##*/}" --setenv=DEBIAN_FRONTEND=noninteractive /bin/sh "$d/run.sh" "$d" "$@" || exit 125',
  'else',
  '  setsid /bin/sh "$d/run.sh" "$d" "$@" < /dev/null > /dev/null 2>&1 &',
  'fi',
  'i=0; while [ ! -f "$d/pid" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done',
  `[ -f "$d/pid" ] || { echo "bpa-functions: the detached install did not start in $d" >&2; exit 125; }`,
  `echo "${startedNotice} ($d, pid $(cat "$d/pid"))"`,
].join('\n');

/** Last stdout line of a poll: `bpa-install-status: exit <n>|running|lost|missing`. */
export const statusPrefix = 'bpa-install-status: ';

/**
 * The poll script ($1: id): the tail of the install's stdout, then the status line (last, so a
 * kept tail always holds it); the tail of its stderr on stderr. The status is read first, so the
 * output shown is at least as new as it.
 */
export const pollScript = [
  `d=${installsDirectory}/$1`,
  'if [ -f "$d/exit" ]; then st="exit $(cat "$d/exit")"',
  `elif ${aliveTest}; then st=running`,
  // The wrapper writes `exit` and then ends: one that ended between the two tests above is
  // read here, not taken for lost (a race seen under load).
  'elif [ -f "$d/exit" ]; then st="exit $(cat "$d/exit")"',
  'elif [ -d "$d" ]; then st=lost; else st=missing; fi',
  'tail -n 19 "$d/out" 2> /dev/null; tail -n 20 "$d/err" >&2 2> /dev/null',
  `echo "${statusPrefix}$st"`,
].join('\n');

const sudo = (username: string, command: string) => (username === 'root' ? command : `sudo -n ${command}`);

/** The command that starts (or finds) the install `id` of these words; whole under sudo -n for non-root. */
export function startCommand(input: {
  id: string;
  words: readonly string[];
  username: string;
  lockTimeoutSeconds?: number;
}): string {
  return sudo(
    input.username,
    [
      'env',
      'DEBIAN_FRONTEND=noninteractive',
      'sh',
      '-c',
      shellQuote(startScript),
      'sh',
      shellQuote(input.id),
      shellQuote(installScript(input.lockTimeoutSeconds)),
      ...input.words.map(shellQuote),
    ].join(' '),
  );
}

export function pollCommand(id: string, username: string): string {
  return sudo(username, ['sh', '-c', shellQuote(pollScript), 'sh', shellQuote(id)].join(' '));
}

export type PollStatus =
  { state: 'exit'; exitCode: number } | { state: 'running' | 'lost' | 'missing' } | { state: 'unreadable' };

/** Pure: the status line of a poll's stdout. */
export function parsePollStatus(stdoutTail: readonly string[]): PollStatus {
  const line = stdoutTail.findLast((l) => l.startsWith(statusPrefix));
  const value = line?.slice(statusPrefix.length).trim() ?? '';
  const exit = /^exit (\d+)$/.exec(value);
  if (exit) return { state: 'exit', exitCode: Number(exit[1]) };
  if (value === 'running' || value === 'lost' || value === 'missing') return { state: value };
  return { state: 'unreadable' };
}

export interface DetachedInstallOptions {
  session: Omit<SshSessionOptions, 'commandTimeoutMs'>;
  /** How long the installer polls before it reports (the install is left running). */
  commandTimeoutMs: number;
  /** Between polls. */
  pollIntervalMs: number;
  /** Ends the polling early (the Software was deleted, the pod is stopping): reported, never killed. */
  signal?: AbortSignal;
}

/** How long the start and each poll session may take once connected: they only read files. */
const shortCommandMs = 60_000;

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

/** What a poll's output holds besides its status line. */
const withoutStatus = (lines: readonly string[]) => lines.filter((l) => !l.startsWith(statusPrefix));

/**
 * Starts (or attaches to) the detached install and polls it until it ends, the timeout passes or
 * the signal fires. The result reads like one session's: exit code, stdout and stderr tails; the
 * reasons of a session (ConnectFailed, HostKey*, ...), plus CommandTimeout ("left running") and
 * PollingStopped. Never throws for a host fault.
 */
export async function runDetachedInstall(
  options: DetachedInstallOptions,
  start: string,
  poll: string,
): Promise<SshCommandResult & { attached?: boolean }> {
  const started = performance.now();
  const where = `${options.session.host}:${options.session.port}`;
  let policy = options.session.hostKeyPolicy;
  const sessionMs = Math.min(shortCommandMs, options.commandTimeoutMs);
  const first = await runSshCommand({ ...options.session, commandTimeoutMs: sessionMs }, start);
  if (first.error) return first;
  const attached = first.stdoutTail.some((l) => l.startsWith(attachedNotice));
  // Every later session must meet the key the first one accepted (trust on first use included).
  if (policy.mode === 'trust-on-first-use' && !policy.expectedFingerprint && first.hostKeyFingerprint)
    policy = { ...policy, expectedFingerprint: first.hostKeyFingerprint };
  const base = {
    connectDurationMs: first.connectDurationMs,
    hostKeyFingerprint: first.hostKeyFingerprint,
    ...(first.hostKeyFirstUse ? { hostKeyFirstUse: true } : {}),
    attached,
  };
  const seconds = (ms: number) => `${Math.round(ms / 100) / 10}s`;
  let last: SshCommandResult | undefined;
  for (;;) {
    const elapsed = performance.now() - started;
    const tails = { stdoutTail: withoutStatus(last?.stdoutTail ?? []), stderrTail: last?.stderrTail ?? [] };
    if (options.signal?.aborted)
      return {
        ...base,
        ...tails,
        exitCode: null,
        error: {
          reason: 'PollingStopped',
          message: `Stopped waiting for the install on ${where} (${String(options.signal.reason ?? 'stopped')}); it was left running on the host: dpkg is never killed`,
        },
        durationMs: elapsed,
      };
    if (elapsed >= options.commandTimeoutMs)
      return {
        ...base,
        ...tails,
        exitCode: null,
        error: {
          reason: 'CommandTimeout',
          message: `The install did not finish within ${seconds(options.commandTimeoutMs)} on ${where}; it was left running on the host (dpkg is never killed), and the next attempt waits for it`,
        },
        durationMs: elapsed,
      };
    await sleep(
      Math.min(options.pollIntervalMs, Math.max(0, options.commandTimeoutMs - elapsed)),
      options.signal,
    );
    if (options.signal?.aborted) continue;
    const result = await runSshCommand(
      { ...options.session, hostKeyPolicy: policy, commandTimeoutMs: sessionMs },
      poll,
    );
    // A key that changed, a refused login: final. A poll that could not connect: poll again.
    if (result.error && /^(HostKey|Authentication|InvalidSession)/.test(result.error.reason)) return result;
    if (result.error) continue;
    last = result;
    const status = parsePollStatus(result.stdoutTail);
    const out = withoutStatus(result.stdoutTail);
    const durationMs = performance.now() - started;
    if (status.state === 'running' || status.state === 'unreadable') continue;
    if (status.state === 'exit') {
      if (status.exitCode === 0)
        return { ...base, exitCode: 0, stdoutTail: out, stderrTail: result.stderrTail, durationMs };
      const lastLine = result.stderrTail.at(-1);
      return {
        ...base,
        exitCode: status.exitCode,
        error: {
          reason: 'CommandFailed',
          message: `The command exited with code ${status.exitCode} on ${where}${lastLine ? `: ${lastLine}` : ''}`,
        },
        stdoutTail: out,
        stderrTail: result.stderrTail,
        durationMs,
      };
    }
    return {
      ...base,
      exitCode: null,
      error: {
        reason: 'CommandKilled',
        message:
          status.state === 'lost'
            ? `The install on ${where} ended without an exit status (killed on the host, or the host restarted)`
            : `The install directory on ${where} is gone (removed on the host)`,
      },
      stdoutTail: out,
      stderrTail: result.stderrTail,
      durationMs,
    };
  }
}
