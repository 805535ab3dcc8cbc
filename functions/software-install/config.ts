import { z } from 'zod';
import { sweepIntervalEnv } from '../../shared/k8s/sweep.js';
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
  /**
   * known_hosts lines themselves: how the install Job gets software-install's SSH_KNOWN_HOSTS
   * (a file of the function's pod; host public keys, not secrets). Wins over SSH_KNOWN_HOSTS.
   */
  SSH_KNOWN_HOSTS_LINES: envOptionalString(),
  SSH_CONCURRENCY: envInt(32, { min: 1, max: 1000 }),
  SSH_TIMEOUT_SECONDS: envInt(600, { min: 1 }),
  SSH_CONNECT_TIMEOUT_SECONDS: envInt(15, { min: 1 }),
  /** apt's `-o DPkg::Lock::Timeout`: how long it waits for a dpkg lock held by another apt. */
  APT_LOCK_TIMEOUT_SECONDS: envInt(300, { min: 0, max: 86400 }),
  /** Attempts per host (the first included) before a host counts as failed (contract section 11). */
  INSTALL_ATTEMPTS: envInt(3, { min: 1, max: 20 }),
  /** Wait before the second attempt on a host; doubled for each next one, at most 16 times this. */
  INSTALL_RETRY_DELAY_SECONDS: envInt(10, { min: 0, max: 3600 }),
  /** Between polls of an install running detached on a host (ssh/detached.ts). */
  INSTALL_POLL_SECONDS: envInt(5, { min: 1, max: 600 }),
  /** A host Lease's duration: how long a dead installer keeps a host before another may take it. */
  HOST_LEASE_SECONDS: envInt(60, { min: 5, max: 3600 }),
  /**
   * The install Job's image: the functions' own (the same TypeScript install code). The default
   * is the reference manifests' image of software-install, so one kustomize `images:` entry
   * changes both (set it when the function's image is renamed or pinned by digest).
   */
  INSTALL_JOB_IMAGE: envString('ghcr.io/bpa-functions/software-install'),
  /** The image's command for the install entry point (comma-separated words; relative to its WORKDIR /app). */
  INSTALL_JOB_COMMAND: envList(['node', 'dist/bundle/software-install-job.mjs']),
  /**
   * The install Job's activeDeadlineSeconds; 0: long enough for every host's attempts (from the
   * SSH timeouts, INSTALL_ATTEMPTS, the retry delays and the number of hosts).
   */
  INSTALL_JOB_DEADLINE_SECONDS: envInt(0, { min: 0, max: 7 * 86400 }),
  /** Namespaces the sweep looks at (comma-separated); empty: all namespaces. */
  SWEEP_NAMESPACES: envList<string>([]),
  /** The least time between two sweeps of this instance, however many pings arrive (shared/k8s/sweep.ts). */
  SWEEP_INTERVAL_SECONDS: sweepIntervalEnv,
});
export type SoftwareInstallConfig = z.infer<typeof softwareInstallConfigSchema>;
