import { readFile, stat } from 'node:fs/promises';
import { z } from 'zod';
import { transient } from '../../shared/errors.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { softwaresResource } from '../../shared/k8s/resources.js';
import { listCustomObjects } from '../../shared/k8s/custom-objects.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import { sha256FingerprintSchema } from './ssh/host-key-policy.js';
import type { HostKeyVerification } from './ssh/install.js';
import type { SoftwareInstallConfig } from './config.js';

const recordedHostSchema = z.object({ ip: z.string(), hostKeyFingerprint: sha256FingerprintSchema });

let knownHostsCache: { key: string; text: string } | undefined;

/** The configured known_hosts file's text; unreadable: a transient KnownHostsUnreadable, never trust. */
export async function readKnownHosts(path: string): Promise<string> {
  try {
    const info = await stat(path);
    const key = `${path}:${info.mtimeMs}:${info.size}`;
    if (knownHostsCache?.key !== key) knownHostsCache = { key, text: await readFile(path, 'utf8') };
    return knownHostsCache.text;
  } catch (error) {
    // A configured known_hosts that cannot be read must never fall back to trusting anything.
    throw transient('KnownHostsUnreadable', `Cannot read SSH_KNOWN_HOSTS ${path}: ${String(error)}`);
  }
}

/** Fingerprints recorded in a Software's status.hosts[], by IP. */
export function recordedFingerprints(object: StoredObject): Record<string, string> {
  const hosts = Array.isArray(object.status?.hosts) ? (object.status.hosts as unknown[]) : [];
  const fingerprints: Record<string, string> = {};
  for (const host of hosts) {
    const parsed = recordedHostSchema.safeParse(host);
    if (parsed.success) fingerprints[parsed.data.ip] = parsed.data.hostKeyFingerprint;
  }
  return fingerprints;
}

/**
 * How host keys are checked for this run: the configured known_hosts, or trust on first use
 * with every fingerprint already recorded for the cluster's hosts (this Software's own record
 * first, then other Softwares of the same cluster in the namespace), so a host trusted once
 * stays pinned whichever Software connects next.
 */
export async function hostKeyVerification(
  config: SoftwareInstallConfig,
  clients: KubeClients,
  software: StoredObject,
  cluster: string,
): Promise<HostKeyVerification> {
  // The install Job gets the function's known_hosts as text (a file of the function's pod).
  if (config.SSH_KNOWN_HOSTS_LINES) return { mode: 'known-hosts', knownHosts: config.SSH_KNOWN_HOSTS_LINES };
  if (config.SSH_KNOWN_HOSTS)
    return { mode: 'known-hosts', knownHosts: await readKnownHosts(config.SSH_KNOWN_HOSTS) };
  const siblings = await listCustomObjects(clients, softwaresResource, {
    namespace: software.metadata.namespace,
    labelSelector: `cluster=${cluster}`,
  });
  const fingerprints: Record<string, string> = {};
  for (const sibling of siblings) {
    if (sibling.metadata.uid === software.metadata.uid) continue;
    Object.assign(fingerprints, recordedFingerprints(sibling));
  }
  Object.assign(fingerprints, recordedFingerprints(software));
  return { mode: 'trust-on-first-use', fingerprints };
}
