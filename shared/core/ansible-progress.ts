/**
 * Per-node progress from the KUD installer's own output (contract section 14): the lines of
 * ansible-playbook's default output (`PLAY [...]`, `TASK [...]`, `ok: [host]`,
 * `fatal: [host]: FAILED! => {...}`, `PLAY RECAP`) turned into each host's phase, the play and task
 * it is at, and for a failure the task and Ansible's message. Pure: the log text in, the state out.
 *
 * The text is a bounded tail of the pod's log, read again and again while the Job runs: lines
 * before the window's first header belong to a task named earlier, so a host keeps what was
 * recorded for it (mergeNodeProgress) unless the window says more.
 */

export type NodePhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed';

/** Why a host failed: a task failed on it, or Ansible could not reach it. */
export type NodeFailure = 'TaskFailed' | 'HostUnreachable';

export interface NodeProgress {
  phase: NodePhase;
  /** The play the host is at (or ended in). */
  play?: string;
  /** The task the host ran last; for a failure, the task that failed. */
  task?: string;
  /** For a failure: whether the task failed or the host could not be reached. */
  reason?: NodeFailure;
  /** For a failure: Ansible's own message (its `msg`), at most messageMaxChars. */
  message?: string;
}

export interface AnsibleProgress {
  /** What the window says about each host it names (an inventory host name: the node label). */
  hosts: Map<string, NodeProgress>;
  /** The window holds the PLAY RECAP: the run is over and the phases are final. */
  finished: boolean;
}

export const messageMaxChars = 512;
const nameMaxChars = 200;

const headerPattern = /^(PLAY|TASK|RUNNING HANDLER) \[(.*)\] \*+\s*$/;
// `ok: [host]`, `changed: [host -> other]`, `ok: [host] => (item=x)`, `fatal: [host]: FAILED! => {`
const resultPattern =
  /^(ok|changed|skipping|fatal|failed|included|ignoring): \[([^\]\s]+)(?: -> [^\]]*)?\](?::? ?(FAILED!|UNREACHABLE!))?(?: => (.*))?$/;
const recapPattern = /^(\S+)\s+: ok=\d+\s+changed=\d+\s+unreachable=(\d+)\s+failed=(\d+)/;

const bounded = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** Ansible's `msg` from a result's JSON (complete or cut off by the window), else its first line. */
export function resultMessage(json: string): string | undefined {
  let message: unknown;
  try {
    const parsed = JSON.parse(json) as Record<string, unknown>;
    message = parsed.msg ?? parsed.stderr ?? parsed.reason;
  } catch {
    const found = /"msg": "((?:[^"\\]|\\.)*)"/.exec(json);
    if (found) {
      try {
        message = JSON.parse(`"${found[1]}"`);
      } catch {
        message = found[1];
      }
    }
  }
  if (typeof message !== 'string' || message.trim() === '') return undefined;
  return bounded(message.replace(/\s+/g, ' ').trim(), messageMaxChars);
}

/** Reads a window of ansible-playbook's default output. */
export function parseAnsibleOutput(text: string): AnsibleProgress {
  const hosts = new Map<string, NodeProgress>();
  let play: string | undefined;
  let task: string | undefined;
  let inRecap = false;
  let finished = false;
  // A result's JSON spread over several lines (`=> {` ... `}`), and the host it belongs to.
  let pending: { host: string; lines: string[] } | undefined;
  let lastFailed: string | undefined;

  const at = (host: string): NodeProgress => {
    const known = hosts.get(host);
    if (known) return known;
    const fresh: NodeProgress = { phase: 'Running' };
    hosts.set(host, fresh);
    return fresh;
  };
  const finishPending = () => {
    if (!pending) return;
    const message = resultMessage(pending.lines.join('\n'));
    const node = hosts.get(pending.host);
    if (node && message) node.message = message;
    pending = undefined;
  };

  for (const raw of text.split('\n')) {
    const line = raw.replace(/\r$/, '');
    if (pending) {
      pending.lines.push(line);
      if (line === '}') finishPending();
      continue;
    }
    const header = headerPattern.exec(line);
    if (header) {
      const name = bounded(header[2]!, nameMaxChars);
      inRecap = false;
      if (header[1] === 'PLAY') {
        play = name;
        task = undefined;
      } else task = name;
      continue;
    }
    if (/^PLAY RECAP \*+\s*$/.test(line)) {
      inRecap = true;
      finished = true;
      continue;
    }
    if (inRecap) {
      const recap = recapPattern.exec(line);
      if (!recap) continue;
      const node = at(recap[1]!);
      const unreachable = Number(recap[2]);
      const failed = Number(recap[3]);
      if (failed > 0 || unreachable > 0) {
        node.phase = 'Failed';
        node.reason ??= failed > 0 ? 'TaskFailed' : 'HostUnreachable';
      } else {
        node.phase = 'Succeeded';
        delete node.reason;
        delete node.message;
      }
      continue;
    }
    if (line === '...ignoring' && lastFailed) {
      // ignore_errors: the failure does not count, the host goes on.
      const node = at(lastFailed);
      node.phase = 'Running';
      delete node.reason;
      delete node.message;
      lastFailed = undefined;
      continue;
    }
    const result = resultPattern.exec(line);
    if (!result) continue;
    const [, status, host, failure, rest] = result as unknown as [string, string, string, string?, string?];
    const node = at(host);
    if (play) node.play = play;
    if (task) node.task = task;
    lastFailed = undefined;
    if (status === 'fatal' || status === 'failed') {
      node.phase = 'Failed';
      node.reason = failure === 'UNREACHABLE!' ? 'HostUnreachable' : 'TaskFailed';
      delete node.message;
      lastFailed = host;
      if (rest !== undefined) {
        if (rest.trim() === '{') pending = { host, lines: [rest] };
        else {
          const message = resultMessage(rest);
          if (message) node.message = message;
        }
      }
      continue;
    }
    // A later result for a failed host: its failure was rescued or ignored.
    node.phase = 'Running';
    delete node.reason;
    delete node.message;
  }
  finishPending();
  return { hosts, finished };
}

/**
 * A node's progress after a new window: what the window says about it wins; what the window does
 * not say (a task named before it, a failure scrolled out of it) is kept from `recorded`. A node
 * the output has not named yet is Pending.
 */
export function mergeNodeProgress(
  recorded: NodeProgress | undefined,
  seen: NodeProgress | undefined,
): NodeProgress {
  if (!seen) return recorded ?? { phase: 'Pending' };
  const merged: NodeProgress = { ...seen };
  if (!merged.play && recorded?.play) merged.play = recorded.play;
  if (!merged.task && recorded?.task) merged.task = recorded.task;
  // The recap says Failed; the fatal line that said why may have left the window.
  if (merged.phase === 'Failed' && recorded?.phase === 'Failed') {
    merged.reason ??= recorded.reason;
    if (!merged.message && recorded.message) merged.message = recorded.message;
  }
  return merged;
}

/** `host <label> failed at task [<task>]: <message>`, for a condition's message. */
export function describeFailure(label: string, node: NodeProgress): string {
  const what = node.reason === 'HostUnreachable' ? 'was unreachable' : 'failed';
  return `host ${label} ${what}${node.task ? ` at task [${node.task}]` : ''}${node.message ? `: ${node.message}` : ''}`;
}
