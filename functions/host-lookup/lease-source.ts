import { readFile, stat } from 'node:fs/promises';
import { describeError, invalid, transient } from '../../shared/errors.js';
import { parseLeases, type LeaseIndex } from '../../shared/core/leases.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { readConfigMap } from '../../shared/k8s/config-maps.js';
import type { Logger } from '../../shared/log.js';

/** Where the DHCP lease file comes from: a mounted path or a key of a ConfigMap. */
export type LeasesSource =
  { kind: 'file'; path: string } | { kind: 'configmap'; namespace: string; name: string; key: string };

/** Parses `LEASES_SOURCE`: `/path/to/dhcpd.leases` or `configmap:<namespace>/<name>/<key>`. */
export function parseLeasesSource(text: string): LeasesSource {
  if (text.startsWith('configmap:')) {
    const match = /^configmap:([a-z0-9][-a-z0-9]*)\/([a-z0-9][-a-z0-9.]*)\/([-._a-zA-Z0-9]+)$/.exec(text);
    if (!match)
      throw invalid(
        'InvalidLeasesSource',
        `LEASES_SOURCE ${JSON.stringify(text)} must look like configmap:<namespace>/<name>/<key>`,
      );
    const [, namespace, name, key] = match as unknown as [string, string, string, string];
    return { kind: 'configmap', namespace, name, key };
  }
  if (!text.startsWith('/'))
    throw invalid(
      'InvalidLeasesSource',
      `LEASES_SOURCE ${JSON.stringify(text)} must be an absolute file path or configmap:<namespace>/<name>/<key>`,
    );
  return { kind: 'file', path: text };
}

// By its code alone: fs errors need not be instances of this realm's Error (jest's VM contexts).
const isNotFound = (error: unknown) =>
  typeof error === 'object' && error !== null && (error as NodeJS.ErrnoException).code === 'ENOENT';

// The last parse, keyed by what identifies its input (file mtime+size, ConfigMap
// resourceVersion): a 100,000-block lease file is parsed once, not once per event.
let cached: { key: string; index: LeaseIndex } | undefined;

async function parseCached(key: string, read: () => Promise<string> | string): Promise<LeaseIndex> {
  if (cached?.key === key) return cached.index;
  const index = parseLeases(await read());
  cached = { key, index };
  return index;
}

/**
 * The parsed lease file, or undefined when none is configured or it does not exist yet (a DHCP
 * server that has not written it): nodes then get their IPs from the other sources, and a
 * node without one fails with the contract's "IP address not found" message. A lease file that
 * is there but cannot be read (a directory in its place, a parent that is not a directory or not
 * searchable, an I/O error) is an outage, not an absence: a transient LeasesUnreadable (503, the
 * broker retries, HostsResolved Unknown), never a False "IP address not found" that blames the host.
 */
export async function loadLeases(
  clients: KubeClients,
  source: LeasesSource | undefined,
  log: Logger,
): Promise<LeaseIndex | undefined> {
  if (!source) return undefined;
  if (source.kind === 'file') {
    let info;
    try {
      info = await stat(source.path);
    } catch (error) {
      if (!isNotFound(error))
        throw transient('LeasesUnreadable', `Cannot read the lease file ${source.path}: ${String(error)}`);
      log.warn('lease file not found; using the other IP sources', {
        path: source.path,
        error: describeError(error).message,
      });
      return undefined;
    }
    return parseCached(`file:${source.path}:${info.mtimeMs}:${info.size}`, () =>
      readFile(source.path, 'utf8').catch((error: unknown) => {
        throw transient('LeasesUnreadable', `Cannot read the lease file ${source.path}: ${String(error)}`);
      }),
    );
  }
  const configMap = await readConfigMap(clients, source.namespace, source.name);
  const text = configMap?.data?.[source.key];
  if (text === undefined) {
    log.warn('lease ConfigMap or key not found; using the other IP sources', { ...source });
    return undefined;
  }
  const version = configMap?.metadata?.resourceVersion ?? '';
  return parseCached(`configmap:${source.namespace}/${source.name}/${source.key}:${version}`, () => text);
}
