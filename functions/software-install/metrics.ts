import type { HostResult } from '../../shared/events/types.js';
import {
  counterSpec,
  histogramSpec,
  secondsBuckets,
  type FunctionMetrics,
} from '../../shared/telemetry/metrics.js';

// Recorded by software-install when it announces the outcome an install Job wrote (per-host
// results from the Software's status): the Job's pod is short-lived and serves no /metrics.

export const hostInstalls = counterSpec({
  name: 'bpa_software_host_installs_total',
  help: 'Per-host software installs, by outcome (succeeded, failed)',
  labelNames: ['outcome'],
});

/** A host's install as the Job recorded it: its last attempt, connect to exit status. */
export const sshCommandDuration = histogramSpec({
  name: 'bpa_ssh_command_duration_seconds',
  help: 'Time from starting an SSH session to the install command exit status',
  labelNames: ['outcome'],
  buckets: secondsBuckets,
});

export const softwareInstallMetrics = [hostInstalls, sshCommandDuration];

/** One announced install run's hosts, counted once (the announcement is made once per Job). */
export function recordHostResults(metrics: FunctionMetrics | undefined, hosts: readonly HostResult[]) {
  for (const host of hosts) {
    const outcome = host.error === undefined ? 'succeeded' : 'failed';
    metrics?.counter(hostInstalls).inc({ outcome });
    // A host that never ran the command (no connection, refused key) has no command time.
    if (host.exitCode !== null)
      metrics?.histogram(sshCommandDuration).observe({ outcome }, host.durationMs / 1000);
  }
}
