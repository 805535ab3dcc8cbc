import { z } from 'zod';
import type { Logger } from '../../../shared/log.js';
import type { NodeRole } from '../../../shared/schemas/node.js';
import { buildInstallCommand, packageSpecsFromItems, packageWord } from './command.js';
import { installId, pollCommand, runDetachedInstall, startCommand } from './detached.js';
import type { PackageSpec } from './command.js';
import { sha256FingerprintSchema } from './host-key-policy.js';
import type { HostKeyPolicy } from './host-key-policy.js';
import type { SshCommandResult } from './session.js';

/** The packages a node gets: masterSoftware if master, then workerSoftware if worker, in one list. */
export function packagesForRoles(
  roles: readonly NodeRole[],
  software: { masterSoftware?: readonly unknown[]; workerSoftware?: readonly unknown[] },
): PackageSpec[] {
  return [
    ...(roles.includes('master') ? packageSpecsFromItems(software.masterSoftware ?? []) : []),
    ...(roles.includes('worker') ? packageSpecsFromItems(software.workerSoftware ?? []) : []),
  ];
}

export interface HostInstallTarget {
  /** Node label, for status and messages. */
  node: string;
  ip: string;
  packages: readonly PackageSpec[];
}

export interface PlannedHostInstall {
  node: string;
  ip: string;
  /** The install's id on the host (ssh/detached.ts): a second installer of the same install attaches. */
  installId: string;
  /** Starts the install detached (or finds it running): what a host's sshd receives for the install. */
  command: string;
  /** Reads where the detached install stands. */
  poll: string;
}

/**
 * Validates every package of every host and renders each command, before anything connects.
 * Throws BpaError (invalid) on the first bad word. Hosts without packages get no session.
 * `installKey` names the install (the Software's uid and generation): the same key, host and
 * packages give the same id, so a second installer polls the first one's apt instead of starting
 * another.
 */
export function planInstall(
  hosts: readonly HostInstallTarget[],
  username: string,
  lockTimeoutSeconds?: number,
  installKey = '',
): PlannedHostInstall[] {
  return hosts
    .filter((host) => host.packages.length > 0)
    .map((host) => {
      // Validates every word and the size of the whole (the same checks as the plain command).
      buildInstallCommand({ packages: host.packages, username, lockTimeoutSeconds });
      const words = [...new Set(host.packages.map(packageWord))];
      const id = installId(installKey, host.ip, words);
      return {
        node: host.node,
        ip: host.ip,
        installId: id,
        command: startCommand({ id, words, username, lockTimeoutSeconds }),
        poll: pollCommand(id, username),
      };
    });
}

/**
 * Host keys for a whole run: one known_hosts text for every host, or trust-on-first-use with the
 * fingerprints already recorded in status (by IP); a host with none recorded is trusted once.
 */
export const hostKeyVerificationSchema = z.discriminatedUnion('mode', [
  z.object({ mode: z.literal('known-hosts'), knownHosts: z.string() }),
  z.object({
    mode: z.literal('trust-on-first-use'),
    fingerprints: z.record(z.string(), sha256FingerprintSchema).default({}),
  }),
]);
export type HostKeyVerification = z.input<typeof hostKeyVerificationSchema>;

export function policyForHost(verification: HostKeyVerification, ip: string): HostKeyPolicy {
  if (verification.mode === 'known-hosts') return verification;
  const expectedFingerprint = verification.fingerprints?.[ip];
  return expectedFingerprint === undefined
    ? { mode: 'trust-on-first-use' }
    : { mode: 'trust-on-first-use', expectedFingerprint };
}

export interface InstallRunOptions {
  hosts: readonly PlannedHostInstall[];
  port: number;
  username: string;
  privateKey: string | Buffer;
  hostKeys: HostKeyVerification;
  connectTimeoutMs: number;
  commandTimeoutMs: number;
  /** Hosts worked on at once. Default 10. */
  concurrency?: number;
  logger?: Logger;
  /** Between polls of a detached install. Default 2 s. */
  pollIntervalMs?: number;
  /** Ends the polling (never the install): the Software was deleted, the pod is stopping. */
  signal?: AbortSignal;
}

export const defaultPollIntervalMs = 2000;

/** One host's install: start it detached (or attach), poll until it ends or the timeout (ssh/detached.ts). */
export function installOneHost(options: InstallRunOptions, host: PlannedHostInstall) {
  return runDetachedInstall(
    {
      session: {
        host: host.ip,
        port: options.port,
        username: options.username,
        privateKey: options.privateKey,
        hostKeyPolicy: policyForHost(options.hostKeys, host.ip),
        connectTimeoutMs: options.connectTimeoutMs,
      },
      commandTimeoutMs: options.commandTimeoutMs,
      pollIntervalMs: options.pollIntervalMs ?? defaultPollIntervalMs,
      ...(options.signal ? { signal: options.signal } : {}),
    },
    host.command,
    host.poll,
  );
}

export type HostInstallResult = PlannedHostInstall &
  SshCommandResult & {
    /** ISO time the session started. */
    startedAt: string;
  };

/**
 * A host whose install rejected instead of returning a result: a bug (runSshCommand never
 * rejects), still reported for that host alone, as a failed session.
 */
export function internalErrorResult(host: PlannedHostInstall, cause: unknown): HostInstallResult {
  return {
    ...host,
    exitCode: null,
    error: { reason: 'SessionClosed', message: `Internal error on ${host.ip}: ${String(cause)}` },
    stdoutTail: [],
    stderrTail: [],
    durationMs: 0,
    startedAt: new Date().toISOString(),
  };
}
