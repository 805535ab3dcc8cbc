import { z } from 'zod';
import { envInt, envList, envOptionalString, envString } from '../../shared/config.js';
import { defaultSshKeySecret } from '../../shared/core/kud-job.js';

/** software-install's env (docs/architecture.md, Config). */
export const softwareInstallConfigSchema = z.object({
  SSH_USER: envString('root'),
  SSH_PORT: envInt(22, { min: 1, max: 65535 }),
  /** Secret in the Software's namespace with the private key under `id_rsa`. */
  SSH_KEY_SECRET: envString(defaultSshKeySecret),
  /** known_hosts file; absent: trust on first use, fingerprints recorded in status and enforced. */
  SSH_KNOWN_HOSTS: envOptionalString(),
  SSH_CONCURRENCY: envInt(32, { min: 1, max: 1000 }),
  SSH_TIMEOUT_SECONDS: envInt(600, { min: 1 }),
  SSH_CONNECT_TIMEOUT_SECONDS: envInt(15, { min: 1 }),
  /** Namespaces the sweep looks at (comma-separated); empty: all namespaces. */
  SWEEP_NAMESPACES: envList<string>([]),
});
export type SoftwareInstallConfig = z.infer<typeof softwareInstallConfigSchema>;
