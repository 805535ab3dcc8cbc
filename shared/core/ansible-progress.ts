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

import {
  nodeMessageMaxChars as messageMaxChars,
  type NodeProgress,
  type StatusNode,
} from '../schemas/provisioning.js';

export { messageMaxChars, type NodeProgress };

export interface AnsibleProgress {
  /** What the window says about each host it names (an inventory host name: the node label). */
  hosts: Map<string, NodeProgress>;
  /** The window holds the PLAY RECAP: the run is over and the phases are final. */
  finished: boolean;
}

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
        node.failure ??= failed > 0 ? 'TaskFailed' : 'HostUnreachable';
      } else {
        node.phase = 'Succeeded';
        delete node.failure;
        delete node.message;
      }
      continue;
    }
    if (line === '...ignoring' && lastFailed) {
      // ignore_errors: the failure does not count, the host goes on.
      const node = at(lastFailed);
      node.phase = 'Running';
      delete node.failure;
      delete node.message;
      lastFailed = undefined;
      continue;
    }
    const result = resultPattern.exec(line);
    if (!result) continue;
    const [, status, host, kind, rest] = result as unknown as [string, string, string, string?, string?];
    const node = at(host);
    if (play) node.play = play;
    if (task) node.task = task;
    lastFailed = undefined;
    if (status === 'fatal' || status === 'failed') {
      node.phase = 'Failed';
      node.failure = kind === 'UNREACHABLE!' ? 'HostUnreachable' : 'TaskFailed';
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
    delete node.failure;
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
    merged.failure ??= recorded.failure;
    if (!merged.message && recorded.message) merged.message = recorded.message;
  }
  return merged;
}

/** `host <label> failed at task [<task>]: <message>`, for a condition's message. */
export function describeFailure(label: string, node: NodeProgress): string {
  const what = node.failure === 'HostUnreachable' ? 'was unreachable' : 'failed';
  return `host ${label} ${what}${node.task ? ` at task [${node.task}]` : ''}${node.message ? `: ${node.message}` : ''}`;
}

const progressKeys = ['phase', 'play', 'task', 'failure', 'message'] as const;

/** The progress recorded on a status.nodes entry, if any. */
function recordedProgress(node: StatusNode): NodeProgress | undefined {
  if (!node.phase) return undefined;
  const progress: NodeProgress = { phase: node.phase };
  for (const key of progressKeys) if (node[key] !== undefined) Object.assign(progress, { [key]: node[key] });
  return progress;
}

/**
 * status.nodes[] after a window of the installer's output: each node (an inventory host is named
 * by its node label) with its recorded progress merged with what the window says. `recorded`
 * false: the progress on `nodes` is an earlier Job's, and is dropped. Undefined when neither the
 * window nor the record names any node.
 */
export function nodesWithProgress(
  nodes: readonly StatusNode[],
  log: string,
  recorded = true,
): StatusNode[] | undefined {
  const { hosts } = parseAnsibleOutput(log);
  // No Ansible output yet, nor any recorded (an installer that prints none): nothing to say.
  if (!nodes.some((node) => hosts.has(node.label) || (recorded && node.phase))) return undefined;
  return nodes.map((node) => {
    const resolved: StatusNode = { ...node };
    for (const key of progressKeys) delete resolved[key];
    return {
      ...resolved,
      ...mergeNodeProgress(recorded ? recordedProgress(node) : undefined, hosts.get(node.label)),
    };
  });
}

/** The failed nodes, for a condition's message: `host a failed at task [t]: msg; ...` (at most 3). */
export function failedNodesSummary(nodes: readonly StatusNode[]): string | undefined {
  const failed = nodes.flatMap((node) => {
    const progress = recordedProgress(node);
    return progress?.phase === 'Failed' ? [describeFailure(node.label, progress)] : [];
  });
  if (failed.length === 0) return undefined;
  const more = failed.length > 3 ? `; and ${failed.length - 3} more host(s)` : '';
  return failed.slice(0, 3).join('; ') + more;
}
