/**
 * The shell the lab's recorder hosts (local/lab/openssh-hosts.ts) run as sshd's ForceCommand:
 * record the session's command, speak the installer's detached protocol, then behave as told.
 */
import { shellQuote } from '../../functions/software-install/ssh/command.js';
import {
  attachedNotice,
  startedNotice,
  statusPrefix,
} from '../../functions/software-install/ssh/detached.js';

export type SshHostBehaviour =
  /** Print a little apt-like output and exit 0. */
  | { kind: 'succeed' }
  /** Print `stderr` on stderr and exit with `exitCode`. */
  | { kind: 'fail'; exitCode: number; stderr: string }
  /** Accept the session and never answer within `seconds` (a hung host). */
  | { kind: 'hang'; seconds: number }
  /** Sleep `seconds`, then exit 0 (the fan-out benchmark's one-second command). */
  | { kind: 'slow'; seconds: number }
  /** Run the command for real, as the login user (Ansible's ping module needs a real Python). */
  | { kind: 'shell' }
  /** The demo lab: apt-get commands recorded and answered with marked output, others run for real. */
  | { kind: 'lab' };

/**
 * The installer's detached protocol (functions/software-install/ssh/detached.ts), spoken by
 * behaviour hosts: the start command is recorded (polls are not: a test counts installs) and the
 * behaviour runs as the detached install would, in the background, its output and exit status in
 * files of `installs/<id>`; a poll answers from them like the real poll script. The same id still
 * running is attached to, as on a real host. A `hang` host answers no session at all, start or
 * poll, as a hung host would. Runs before the recorder's own lines; the commands
 * are the installer's own single-quoted words, so `eval set --` splits them as sh would.
 */
const detachedInstallEmulation = `printf '%s' "$behaviour" | grep -q 'exec sleep' || case $SSH_ORIGINAL_COMMAND in
*"${statusPrefix}"*|*"${startedNotice}"*)
  eval "set -- $SSH_ORIGINAL_COMMAND"
  while [ $# -gt 0 ] && [ "$1" != -c ]; do shift; done
  inst="$host_dir/installs/$4"
  case $SSH_ORIGINAL_COMMAND in
  *"${startedNotice}"*) ;;
  *)
    if [ -f "$inst/exit" ]; then st="exit $(cat "$inst/exit")"; elif [ -d "$inst" ]; then st=running; else st=missing; fi
    tail -n 19 "$inst/out" 2> /dev/null; tail -n 20 "$inst/err" >&2 2> /dev/null
    echo "${statusPrefix}$st"; exit 0 ;;
  esac
  record="$host_dir/commands/$(date +%s%N).$$"
  printf '%s' "$SSH_ORIGINAL_COMMAND" > "$record.tmp" && mv "$record.tmp" "$record.cmd"
  if [ -d "$inst" ] && [ ! -f "$inst/exit" ]; then echo "${attachedNotice} ($inst)"; exit 0; fi
  rm -rf "$inst" && mkdir -p "$inst"
  export host_dir
  ( sh -c "$behaviour" < /dev/null > "$inst/out" 2> "$inst/err"; echo $? > "$inst/exit.tmp"; mv "$inst/exit.tmp" "$inst/exit" ) < /dev/null > /dev/null 2>&1 &
  echo "${startedNotice} ($inst)"; exit 0 ;;
esac`;

/**
 * ForceCommand: `recorder.sh <host dir>`. One file per session, named so that a plain sort is
 * the order of arrival; written completely (tmp + mv) before the behaviour runs, so the record
 * exists by the time a client sees the exit status. The behaviour is read once, when the session
 * starts, before anything is recorded: a test that waits for a record and then changes the
 * behaviour changes the next session's, never the one it saw (read later, a loaded machine let
 * the change reach the recorded session: software-install-job's "recovers between attempts").
 */
export const recorderScript = `#!/bin/sh
host_dir=$1
behaviour=$(cat "$host_dir/behaviour.sh")
${detachedInstallEmulation}
record="$host_dir/commands/$(date +%s%N).$$"
printf '%s' "$SSH_ORIGINAL_COMMAND" > "$record.tmp" && mv "$record.tmp" "$record.cmd"
eval "$behaviour"
`;

/** The host's `behaviour.sh`, which the recorder reads as a session starts and runs after recording the command. */
export function behaviourScript(behaviour: SshHostBehaviour): string {
  switch (behaviour.kind) {
    case 'succeed':
      return "printf 'Reading package lists...\\nSetting up packages (recorded, not installed)\\n'\nexit 0\n";
    case 'fail':
      return `printf '%s\\n' ${shellQuote(behaviour.stderr)} >&2\nexit ${Math.trunc(behaviour.exitCode)}\n`;
    case 'hang':
      // The pid file lets stopAll end sessions whose client has long gone.
      return `echo $$ > "$host_dir/pids/$$"\nexec sleep ${Math.trunc(behaviour.seconds)}\n`;
    case 'slow':
      return `sleep ${behaviour.seconds}\nexit 0\n`;
    case 'shell':
      return 'exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"\n';
    case 'lab':
      return [
        'case $SSH_ORIGINAL_COMMAND in',
        '  *apt-get*)',
        // SSH_CONNECTION: client address, client port, server address, server port.
        '    set -- $SSH_CONNECTION',
        `    printf '[bpa demo lab host %s: apt-get recorded, NOT run; nothing is installed]\\n' "$3"`,
        "    printf 'Reading package lists... Done\\nSetting up packages (recorded, not installed)\\n'",
        '    exit 0 ;;',
        'esac',
        'exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"',
        '',
      ].join('\n');
  }
}
