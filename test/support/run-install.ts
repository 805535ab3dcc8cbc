/**
 * The planned installs over SSH without the install Job's Leases and retries: each host once,
 * detached and polled (functions/software-install/ssh/install.ts installOneHost), hosts in
 * parallel up to the limit, results in the order of `hosts`. The SSH suites use it to look at one
 * session's behaviour; the product runs installs only through the install Job
 * (functions/software-install/ssh/host-install.ts runRetriedInstall).
 */
import { silentLogger } from '../../shared/log.js';
import { defaultConcurrency, runWithConcurrency } from '../../functions/software-install/ssh/fanout.js';
import {
  installOneHost,
  internalErrorResult,
  type HostInstallResult,
  type InstallRunOptions,
  type PlannedHostInstall,
} from '../../functions/software-install/ssh/install.js';

export async function runInstall(options: InstallRunOptions): Promise<HostInstallResult[]> {
  const logger = options.logger ?? silentLogger;
  const settled = await runWithConcurrency(
    options.hosts,
    async (host): Promise<HostInstallResult> => {
      const startedAt = new Date().toISOString();
      const log = logger.child({ node: host.node, ip: host.ip });
      log.info('ssh install starting', { port: options.port, username: options.username });
      const result = await installOneHost(options, host);
      const fields = {
        exitCode: result.exitCode,
        durationMs: Math.round(result.durationMs),
        hostKeyFingerprint: result.hostKeyFingerprint,
      };
      if (result.error)
        log.warn('ssh install failed', {
          ...fields,
          reason: result.error.reason,
          message: result.error.message,
        });
      else log.info('ssh install finished', fields);
      return { ...host, ...result, startedAt };
    },
    options.concurrency ?? defaultConcurrency,
  );
  return settled.map((outcome, index) =>
    outcome.status === 'fulfilled'
      ? outcome.value
      : internalErrorResult(options.hosts[index] as PlannedHostInstall, outcome.reason),
  );
}
