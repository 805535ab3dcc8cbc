// The install Job's entry point (contract section 11): software-install's own image runs its
// bundle (scripts/bundle/job-entry-points.mjs; INSTALL_JOB_COMMAND)
//   node dist/bundle/software-install-job.mjs --namespace <ns> --name <software> --generation <n>
// It installs that generation on every node of the Software's cluster and writes the outcome to
// the Software's status. Exit 0 once the outcome is recorded (installed or failed: status says
// which); exit 1 when it could not be recorded (the Job's backoffLimit then runs a new pod).
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { describeError } from '../../../shared/errors.js';
import { createLogger } from '../../../shared/log.js';
import { loadDefaultKubeConfig } from '../../../shared/k8s/clients.js';
import { softwareInstallConfigSchema } from '../config.js';
import { installJobArgsSchema, runInstallJob } from './run.js';

const usage = `Usage: software-install-job --namespace <namespace> --name <software> --generation <generation>

Installs one generation of a Software on every node of its cluster over SSH, one apt at a time
per host (a coordination.k8s.io Lease per host), and writes per-host results to its status.
Configured by the software-install environment (SSH_USER, SSH_PORT, SSH_KEY_SECRET,
SSH_KNOWN_HOSTS, APT_LOCK_TIMEOUT_SECONDS, INSTALL_ATTEMPTS, INSTALL_RETRY_DELAY_SECONDS, ...).
`;

const log = createLogger({ base: { component: 'software-install-job' } });
try {
  const { values } = parseArgs({
    options: {
      namespace: { type: 'string' },
      name: { type: 'string' },
      generation: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(usage);
    process.exit(0);
  }
  const args = installJobArgsSchema.safeParse(values);
  if (!args.success) {
    process.stderr.write(
      `${args.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`).join('\n')}\n\n${usage}`,
    );
    process.exit(2);
  }
  // SIGTERM (the Job deleted with its Software, a node drained): stop polling and exit; the
  // installs run on, detached on their hosts (ssh/detached.ts). Never a signal to apt.
  const stopping = new AbortController();
  process.once('SIGTERM', () => stopping.abort('SIGTERM'));
  const outcome = await runInstallJob(
    {
      kubeConfig: loadDefaultKubeConfig(),
      config: softwareInstallConfigSchema.parse(process.env),
      log,
      instance: process.env.HOSTNAME ?? hostname(),
      signal: stopping.signal,
    },
    args.data,
  );
  log.info('install job done', {
    outcome: outcome.kind,
    ...('reason' in outcome ? { reason: outcome.reason } : {}),
  });
  process.exit(0);
} catch (error) {
  const { reason, message } = describeError(error);
  log.error('install job could not record its outcome', { reason, message });
  process.exit(1);
}
