import { counterSpec, histogramSpec, secondsBuckets } from '../../shared/telemetry/metrics.js';

export const hostInstalls = counterSpec({
  name: 'bpa_software_host_installs_total',
  help: 'Per-host software installs, by outcome (succeeded, failed)',
  labelNames: ['outcome'],
});

/** TCP connect + SSH handshake + authentication, per host session. */
export const sshConnectDuration = histogramSpec({
  name: 'bpa_ssh_connect_duration_seconds',
  help: 'Time to open an authenticated SSH session to a host',
  labelNames: ['outcome'],
  buckets: secondsBuckets,
});

/** Whole session: connect, run the install command, exit status. */
export const sshCommandDuration = histogramSpec({
  name: 'bpa_ssh_command_duration_seconds',
  help: 'Time from starting an SSH session to the install command exit status',
  labelNames: ['outcome'],
  buckets: secondsBuckets,
});

export const softwareInstallMetrics = [hostInstalls, sshConnectDuration, sshCommandDuration];
