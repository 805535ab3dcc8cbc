import type { FunctionMetrics } from '../../shared/telemetry/metrics.js';
import { counterSpec, histogramSpec, secondsBuckets } from '../../shared/telemetry/metrics.js';
import type { HostStatus } from './software-status.js';

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

/**
 * Records an install Job's per-host results (what it wrote to the Software's status) once, when
 * software-install announces its outcome: the Job's pod is not scraped, the function is. A host
 * with `connectMs` had a session (its command ran, whether or not it exited); one without it
 * failed to connect, authenticate or verify the host key.
 */
export function recordHostOutcomes(metrics: FunctionMetrics | undefined, hosts: readonly HostStatus[]): void {
  if (!metrics) return;
  for (const host of hosts) {
    const outcome = host.error === undefined ? 'succeeded' : 'failed';
    metrics.counter(hostInstalls).inc({ outcome });
    const seconds = host.durationMs / 1000;
    if (host.connectMs !== undefined) {
      metrics.histogram(sshConnectDuration).observe({ outcome: 'connected' }, host.connectMs / 1000);
      metrics.histogram(sshCommandDuration).observe({ outcome }, seconds);
    } else if (host.error !== undefined)
      metrics.histogram(sshConnectDuration).observe({ outcome: 'failed' }, seconds);
  }
}
