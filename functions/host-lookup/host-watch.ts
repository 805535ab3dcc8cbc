import { ListWatch, Watch, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { judgeHostClaim, type ClaimOwner } from '../../shared/core/host-claim.js';
import { indexHostsByMac, type HostMacEntry } from '../../shared/core/host-index.js';
import { fastBareMetalHost } from '../../shared/core/bare-metal-host-fast.js';
import { bareMetalHostSchema, type BareMetalHost } from '../../shared/schemas/bare-metal-host.js';
import { callApi } from '../../shared/k8s/api-errors.js';
import { kubeClients, type KubeClients } from '../../shared/k8s/clients.js';
import { bareMetalHostsResource } from '../../shared/k8s/resources.js';
import { describeError } from '../../shared/errors.js';
import type { Logger } from '../../shared/log.js';

/**
 * The BareMetalHosts by MAC, kept while the instance is warm (issue 13 item 2): one paged list,
 * then a watch (client-node's ListWatch, which re-lists after 410 Gone), so a Provisioning costs
 * a few small reads instead of a list of the whole fleet. Started on first use, never at load:
 * `bpa render` and the functions' cold start do not pay for it.
 *
 * Under churn: a host added, re-inspected (new NIC IP) or deleted reaches the index with its watch
 * event, milliseconds after the write (the apiserver's watch cache sends it as etcd commits
 * it), before the Provisioning that follows has gone through its source, the broker and
 * host-lookup's own reads. A MAC the index does not know sends the lookup to a fresh list (a host
 * added a moment ago), at most once per `missRelistMs` while the watch runs; the sweep retries
 * HostNotFound. Each answer is not read again: ten GETs of ~4 KB hosts per Provisioning would
 * cost more than everything else host-lookup reads (bench/fleet-scale.ts).
 * While the watch is down (an error; it restarts after `restartDelayMs`) every lookup lists.
 */

const pageSize = 500;
const missRelistMs = 5_000;
const restartDelayMs = 2_000;
const startTimeoutMs = 10_000;

/** `<namespace>/<name>`, as HostMacEntry names hosts; API list order is this order. */
const keyOf = (host: { metadata: { name: string; namespace?: string } }) =>
  host.metadata.namespace ? `${host.metadata.namespace}/${host.metadata.name}` : host.metadata.name;

/**
 * Only what the index reads (and what ListWatch tracks): ten thousand hosts stay small. That is
 * the MACs, the NIC IPs, spec.consumerRef (who holds the host), Metal3's provisioning state and
 * error (contract section 13: KUD waits for `provisioned`), the inspected CPU count and memory
 * (contract section 14: the preflight) and the resourceVersion (the precondition of a claim, so
 * claiming a free host costs one PATCH and no GET).
 */
function strip(object: unknown): KubernetesObject | undefined {
  const host = fastBareMetalHost(object) ?? bareMetalHostSchema.safeParse(object).data;
  if (!host) return undefined;
  const metadata = (object as { metadata: { uid?: string; resourceVersion?: string } }).metadata;
  return {
    ...host,
    metadata: { ...host.metadata, uid: metadata.uid, resourceVersion: metadata.resourceVersion },
  } as KubernetesObject;
}

/** ListWatch's Watch, with bookmarks asked for and each object stripped as it arrives. */
class StrippingWatch extends Watch {
  override watch(
    path: string,
    queryParams: Record<string, unknown>,
    callback: (phase: string, apiObj: unknown, watchObj?: unknown) => void,
    done: (err: unknown) => void,
  ): Promise<AbortController> {
    return super.watch(
      path,
      { ...queryParams, allowWatchBookmarks: true },
      (phase, object, raw) => {
        if (phase === 'BOOKMARK' || phase === 'ERROR') return callback(phase, object, raw);
        const stripped = strip(object);
        // A host that fails the schema is skipped, as in a list: a broken host hides no other.
        if (stripped) callback(phase, stripped, raw);
      },
      done,
    );
  }
}

interface IndexedHost {
  entries: Map<string, HostMacEntry>;
  consumer?: NonNullable<BareMetalHost['spec']>['consumerRef'];
  resourceVersion?: string;
}

export class WatchedHostIndex {
  private readonly clients: KubeClients;
  private readonly hosts = new Map<string, IndexedHost>();
  /** MAC → keys of the hosts that carry it (usually one). */
  private readonly byMac = new Map<string, Set<string>>();
  private informer?: ListWatch<KubernetesObject>;
  private starting?: Promise<boolean>;
  private live = false;
  private failed = false;
  private stopped = false;
  private lastRelistAt = 0;
  private relisting?: Promise<void>;
  private restartTimer?: NodeJS.Timeout;

  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly namespace: string | undefined,
    private readonly log: Logger,
  ) {
    this.clients = kubeClients(kubeConfig);
  }

  /** The hosts carrying `macs`, by MAC: what indexHostsByMac gives on a fresh list of all hosts. */
  async hostsByMac(macs: ReadonlySet<string>): Promise<Map<string, HostMacEntry>> {
    if (!(await this.ensureStarted())) return this.fromFreshList(macs);
    let found = this.lookup(macs);
    if (found.size < macs.size && Date.now() - this.lastRelistAt >= missRelistMs) {
      await this.relist();
      found = this.lookup(macs);
    }
    return found;
  }

  /** The keys of the hosts whose consumerRef names `owner` (a scan of memory, no API call). */
  claimedBy(owner: ClaimOwner): string[] | undefined {
    if (!this.live) return undefined;
    const keys: string[] = [];
    for (const [key, host] of this.hosts)
      if (host.consumer && judgeHostClaim(host.consumer, owner).kind === 'mine') keys.push(key);
    return keys;
  }

  /**
   * A host as this instance just wrote it (the PATCH's answer), taken in at once so that the next
   * lookup does not judge the copy from before the write; the watch event that follows is the
   * same. Ignored when the index has moved past the version the write was based on.
   */
  noteWritten(object: unknown, basedOn: string | undefined): void {
    const stripped = strip(object);
    if (!stripped) return;
    const key = keyOf(stripped as BareMetalHost);
    if (this.hosts.get(key)?.resourceVersion !== basedOn) return;
    this.upsert(stripped);
  }

  /** What the index holds for `mac` now (tests wait on it). */
  entryFor(mac: string): HostMacEntry | undefined {
    return this.lookup(new Set([mac])).get(mac);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.restartTimer);
    this.live = false;
    await this.informer?.stop();
  }

  private lookup(macs: ReadonlySet<string>): Map<string, HostMacEntry> {
    const found = new Map<string, HostMacEntry>();
    for (const mac of macs) {
      const keys = this.byMac.get(mac);
      if (!keys || keys.size === 0) continue;
      // The first host in list order, as indexHostsByMac picks it.
      const first = keys.size === 1 ? keys.values().next().value! : [...keys].sort()[0]!;
      const entry = this.hosts.get(first)?.entries.get(mac);
      if (entry) found.set(mac, entry);
    }
    return found;
  }

  /**
   * True once the list is in and the watch connected. A start that takes longer than
   * `startTimeoutMs` (a slow list of a large fleet, a watch that does not connect) goes on in the
   * background while this lookup lists for itself.
   */
  private ensureStarted(): Promise<boolean> {
    if (this.live) return Promise.resolve(true);
    if (this.stopped) return Promise.resolve(false);
    this.starting ??= this.start().finally(() => (this.starting = undefined));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), startTimeoutMs);
      timer.unref();
    });
    return Promise.race([this.starting, late]).finally(() => clearTimeout(timer));
  }

  private async start(): Promise<boolean> {
    const { group, version, plural } = bareMetalHostsResource;
    const path = this.namespace
      ? `/apis/${group}/${version}/namespaces/${this.namespace}/${plural}`
      : `/apis/${group}/${version}/${plural}`;
    let listed = false;
    const informer =
      this.informer ??
      new ListWatch<KubernetesObject>(
        path,
        new StrippingWatch(this.kubeConfig),
        async () => {
          const list = await this.pagedList();
          listed = true;
          this.lastRelistAt = Date.now();
          return list;
        },
        false,
      );
    if (!this.informer) {
      informer.on('add', (object) => this.upsert(object));
      informer.on('update', (object) => this.upsert(object));
      informer.on('delete', (object) => this.remove(keyOf(object as BareMetalHost)));
      informer.on('error', (error: unknown) => this.onError(error));
      this.informer = informer;
    }
    this.failed = false;
    await informer.start();
    // A refused or broken watch reports through onError while start() runs.
    this.live = listed && !this.failed && !this.stopped;
    if (this.live)
      this.log.info('BareMetalHost watch started', {
        namespace: this.namespace ?? '(all)',
        hosts: this.hosts.size,
      });
    return this.live;
  }

  private onError(error: unknown): void {
    this.live = false;
    this.failed = true;
    if (this.stopped) return;
    this.log.warn('BareMetalHost watch stopped; lookups list until it restarts', describeError(error));
    clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => void this.ensureStarted(), restartDelayMs);
    this.restartTimer.unref();
  }

  /** A fresh paged list into the index (concurrent callers share one). */
  private relist(): Promise<void> {
    this.relisting ??= (async () => {
      const list = await this.pagedList();
      const seen = new Set<string>();
      for (const object of list.items) {
        seen.add(keyOf(object as BareMetalHost));
        this.upsert(object);
      }
      for (const key of [...this.hosts.keys()]) if (!seen.has(key)) this.remove(key);
      this.lastRelistAt = Date.now();
    })().finally(() => (this.relisting = undefined));
    return this.relisting;
  }

  private async fromFreshList(macs: ReadonlySet<string>): Promise<Map<string, HostMacEntry>> {
    const list = await this.pagedList();
    return indexHostsByMac(list.items as BareMetalHost[], macs);
  }

  /** Every host, `pageSize` at a time (one consistent snapshot: the continue token keeps it). */
  private async pagedList(): Promise<{ metadata: { resourceVersion?: string }; items: KubernetesObject[] }> {
    const { group, version, plural } = bareMetalHostsResource;
    const where = this.namespace ? `namespace ${this.namespace}` : 'all namespaces';
    const items: KubernetesObject[] = [];
    let resourceVersion: string | undefined;
    let next: string | undefined;
    do {
      const page = (await callApi(`list ${plural} in ${where}`, () =>
        this.namespace
          ? this.clients.custom.listNamespacedCustomObject({
              group,
              version,
              plural,
              namespace: this.namespace!,
              limit: pageSize,
              _continue: next,
            })
          : this.clients.custom.listClusterCustomObject({
              group,
              version,
              plural,
              limit: pageSize,
              _continue: next,
            }),
      )) as { metadata?: { resourceVersion?: string; continue?: string }; items?: unknown[] };
      resourceVersion ??= page.metadata?.resourceVersion;
      for (const item of page.items ?? []) {
        // A list's items carry no kind: strip() accepts that, as the schema does.
        const stripped = strip(item);
        if (stripped) items.push(stripped);
      }
      next = page.metadata?.continue || undefined;
    } while (next);
    return { metadata: { resourceVersion }, items };
  }

  private upsert(object: KubernetesObject): void {
    const host = object as BareMetalHost;
    const key = keyOf(host);
    this.remove(key);
    const entries = indexHostsByMac([host]);
    const consumer = host.spec?.consumerRef ?? undefined;
    this.hosts.set(key, { entries, consumer, resourceVersion: host.metadata.resourceVersion });
    for (const mac of entries.keys()) {
      let keys = this.byMac.get(mac);
      if (!keys) this.byMac.set(mac, (keys = new Set()));
      keys.add(key);
    }
  }

  private remove(key: string): void {
    const known = this.hosts.get(key);
    if (!known) return;
    this.hosts.delete(key);
    for (const mac of known.entries.keys()) {
      const keys = this.byMac.get(mac);
      keys?.delete(key);
      if (keys?.size === 0) this.byMac.delete(mac);
    }
  }
}

/** One index per KubeConfig and BMH_NAMESPACE, for as long as the process (or server) runs. */
const indexes = new WeakMap<KubeConfig, Map<string, WatchedHostIndex>>();

export function watchedHostIndex(
  kubeConfig: KubeConfig,
  namespace: string | undefined,
  log: Logger,
): WatchedHostIndex {
  let byNamespace = indexes.get(kubeConfig);
  if (!byNamespace) indexes.set(kubeConfig, (byNamespace = new Map()));
  const key = namespace ?? '';
  let index = byNamespace.get(key);
  if (!index) byNamespace.set(key, (index = new WatchedHostIndex(kubeConfig, namespace, log)));
  return index;
}

/** Stops the watches of `kubeConfig` (the function server closes). */
export async function stopHostIndexes(kubeConfig: KubeConfig): Promise<void> {
  const byNamespace = indexes.get(kubeConfig);
  indexes.delete(kubeConfig);
  for (const index of byNamespace?.values() ?? []) await index.stop();
}
