import { CoordinationV1Api, type KubeConfig, type V1Lease } from '@kubernetes/client-node';
import { apiStatusCode } from '../../shared/k8s/api-errors.js';
import { transient } from '../../shared/errors.js';
import type { Logger } from '../../shared/log.js';
import { silentLogger } from '../../shared/log.js';

/**
 * One apt at a time per host (contract section 11): before a session runs apt on a host, the
 * installer holds the host's coordination.k8s.io Lease, `bpa-apt-<ip>` in the Software's
 * namespace (a cluster's Softwares and its ConfigMap share it). Held while the session runs,
 * renewed every third of its duration; a holder that died (Job pod killed, node lost) stops
 * renewing and the Lease is free once `renewTime + leaseDurationSeconds` has passed.
 *
 * Taking a Lease is a read-modify-write under the read resourceVersion (a 409 means someone
 * else moved first: read again), so two installers never both believe they hold it.
 */

export const hostLeasePrefix = 'bpa-apt-';

/** `bpa-apt-10-0-0-5` for 10.0.0.5 (IPv6: `:` becomes `-` too); a valid DNS-1123 subdomain. */
export function hostLeaseName(ip: string): string {
  const name = `${hostLeasePrefix}${ip.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`.replace(/-+$/, '');
  return name.slice(0, 253);
}

/** What a Lease says: held by someone else until `until`, or free (for us to take). */
export type LeaseState = { free: true } | { free: false; holder: string; until: Date };

/** Pure: is this Lease free for `me` at `now`? Ours, unheld, or expired (its holder died). */
export function leaseState(lease: V1Lease | undefined, me: string, now: Date): LeaseState {
  const spec = lease?.spec;
  const holder = spec?.holderIdentity;
  if (!spec || !holder || holder === me) return { free: true };
  const renewed = spec.renewTime ?? spec.acquireTime;
  const seconds = spec.leaseDurationSeconds ?? 0;
  if (!renewed) return { free: true };
  const until = new Date(new Date(renewed).getTime() + seconds * 1000);
  return until.getTime() <= now.getTime() ? { free: true } : { free: false, holder, until };
}

export interface HostLeaseOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  /** Who holds it: `<namespace>/<software>@<generation>/<pod>`; shown in the Lease. */
  holder: string;
  /** How long a holder that stops renewing keeps the host. */
  durationSeconds: number;
  /** Give up waiting for a busy host after this long (TransientError HostLeaseTimeout). */
  waitTimeoutMs: number;
  /** Poll interval while another holder has it (jittered ±50%). */
  pollMs?: number;
  logger?: Logger;
  /** For tests. */
  now?: () => Date;
}

export interface HeldLease {
  name: string;
  /** Milliseconds spent waiting for another holder before we got it. */
  waitedMs: number;
  release(): Promise<void>;
}

/**
 * A MicroTime as the API server parses it (six fractional digits). client-node types these
 * fields as Date but sends a Date with JavaScript's three digits, which the server rejects (400),
 * and passes strings through unchanged: so a string it is.
 */
export const microTime = (date: Date) =>
  date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z') as unknown as Date;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Holds host Leases for one installer: acquire, keep renewed, release. */
export class HostLeases {
  private readonly api: CoordinationV1Api;
  private readonly log: Logger;
  private readonly now: () => Date;

  constructor(private readonly options: HostLeaseOptions) {
    this.api = options.kubeConfig.makeApiClient(CoordinationV1Api);
    this.log = options.logger ?? silentLogger;
    this.now = options.now ?? (() => new Date());
  }

  /** Waits until the host's Lease is ours, then keeps it renewed until release(). */
  async acquire(ip: string): Promise<HeldLease> {
    const name = hostLeaseName(ip);
    const { namespace, holder, waitTimeoutMs } = this.options;
    const pollMs = this.options.pollMs ?? 500;
    const started = Date.now();
    let lastHolder: string | undefined;
    for (;;) {
      const current = await this.read(name);
      const state = leaseState(current, holder, this.now());
      if (state.free) {
        const taken = await this.take(name, current);
        if (taken) {
          const waitedMs = Date.now() - started;
          this.log.info('host lease acquired', { lease: `${namespace}/${name}`, ip, waitedMs });
          return this.held(name, taken, waitedMs);
        }
        continue; // Someone moved first: read again at once.
      }
      if (state.holder !== lastHolder) {
        lastHolder = state.holder;
        this.log.info('host busy; waiting for its lease', {
          lease: `${namespace}/${name}`,
          ip,
          holder: state.holder,
        });
      }
      if (Date.now() - started >= waitTimeoutMs)
        throw transient(
          'HostLeaseTimeout',
          `Host ${ip} is busy: Lease ${namespace}/${name} is held by ${state.holder}; gave up after ${Math.round(waitTimeoutMs / 1000)}s`,
        );
      await sleep(pollMs * (0.5 + Math.random()));
    }
  }

  private async read(name: string): Promise<V1Lease | undefined> {
    try {
      return await this.api.readNamespacedLease({ name, namespace: this.options.namespace });
    } catch (error) {
      if (apiStatusCode(error) === 404) return undefined;
      throw error;
    }
  }

  /** Creates or takes over the Lease; undefined when another writer won the race (409). */
  private async take(name: string, current: V1Lease | undefined): Promise<V1Lease | undefined> {
    const { namespace, holder, durationSeconds } = this.options;
    const now = microTime(this.now());
    const transitions = current?.spec?.leaseTransitions ?? 0;
    const changedHands = current?.spec?.holderIdentity !== holder;
    const spec = {
      holderIdentity: holder,
      leaseDurationSeconds: durationSeconds,
      acquireTime: now,
      renewTime: now,
      leaseTransitions: current && changedHands ? transitions + 1 : transitions,
    };
    try {
      if (!current)
        return await this.api.createNamespacedLease({
          namespace,
          body: {
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            metadata: { name, namespace, labels: { 'app.kubernetes.io/managed-by': 'bpa-functions' } },
            spec,
          },
        });
      return await this.api.replaceNamespacedLease({ name, namespace, body: { ...current, spec } });
    } catch (error) {
      const code = apiStatusCode(error);
      if (code === 409) return undefined;
      throw error;
    }
  }

  private held(name: string, lease: V1Lease, waitedMs: number): HeldLease {
    const { namespace, holder, durationSeconds } = this.options;
    let current = lease;
    let released = false;
    let renewing: Promise<void> = Promise.resolve();
    const renew = async () => {
      try {
        current = await this.api.replaceNamespacedLease({
          name,
          namespace,
          body: { ...current, spec: { ...current.spec, renewTime: this.now() } },
        });
      } catch (error) {
        // A failed renewal is retried at the next tick; the Lease stays ours until it expires.
        this.log.warn('host lease renewal failed', {
          lease: `${namespace}/${name}`,
          code: apiStatusCode(error),
        });
        const fresh = await this.read(name).catch(() => undefined);
        if (fresh?.spec?.holderIdentity === holder) current = fresh;
      }
    };
    const timer = setInterval(
      () => {
        renewing = renewing.then(renew);
      },
      Math.max(200, (durationSeconds * 1000) / 3),
    );
    timer.unref();
    return {
      name,
      waitedMs,
      release: async () => {
        if (released) return;
        released = true;
        clearInterval(timer);
        await renewing;
        // Released by clearing the holder (the object stays for the next installer to take).
        for (let attempt = 1; attempt <= 5; attempt++) {
          try {
            await this.api.replaceNamespacedLease({
              name,
              namespace,
              body: {
                ...current,
                spec: { ...current.spec, holderIdentity: undefined, leaseDurationSeconds: 1 },
              },
            });
            this.log.info('host lease released', { lease: `${namespace}/${name}` });
            return;
          } catch (error) {
            if (apiStatusCode(error) !== 409) {
              this.log.warn('host lease release failed; it expires on its own', {
                lease: `${namespace}/${name}`,
                code: apiStatusCode(error),
              });
              return;
            }
            const fresh = await this.read(name);
            if (fresh?.spec?.holderIdentity !== holder) return; // Not ours any more.
            current = fresh;
          }
        }
      },
    };
  }
}
