import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNamespace } from '../../local/control-plane/namespaces.js';
import { freeLoopbackPort } from '../../local/control-plane/free-port.js';
import { projectCrds, repoRoot, startControlPlane } from '../../local/control-plane/index.js';
import { startStack, stackBrokerName, stackNamespace } from '../../local/stack/index.js';
import type { FunctionName } from '../../local/stack/function-names.js';
import { kubeClients } from '../../shared/k8s/clients.js';
import { provisioningsResource } from '../../shared/k8s/resources.js';
import { readRequestCounts, requestDelta, type RequestCounts } from './apiserver-metrics.js';
import { CountingKubeConfig } from './counting-kube-config.js';
import { writeFloor, type FloorRecipe } from './floor.js';
import { watchSteps } from './watch-steps.js';
import {
  createHosts,
  guardMemory,
  inParallel,
  mac,
  maxSweeps,
  OutOfMemory,
  Stalled,
  stallMs,
} from './hosts.js';

/**
 * One burst of Provisionings through the embedded chain on a fresh control plane (etcd +
 * kube-apiserver with Metal3's BareMetalHost CRD, no controllers): the fleet's hosts first, one
 * warm-up Provisioning (host-lookup lists and starts its watch), then `provisionings` of
 * `nodesPer` nodes applied at once, timed until all have JobLaunched. Counted three ways: the
 * functions' own clients (requests and bytes read, by resource), the API server's own
 * `apiserver_request_total` (every client), and, with `floor`, the same writes by one plain client
 * after the chain has stopped (bench/fleet/floor.ts). The shared engine of the fleet-scale and
 * chain-speed benches.
 */
export interface BurstOptions {
  hosts: number;
  provisionings: number;
  nodesPer: number;
  log: (line: string) => void;
  /** host-lookup in a process of its own, for its RSS (the fleet-scale bench). */
  hostLookupProcess?: boolean;
  /** Write the floor after the chain, on the same API server. */
  floor?: boolean;
}

/** Where the fleet's hosts and Provisionings live. */
export const fleetNamespace = 'bench-fleet';
const namespace = fleetNamespace;

export function provisioning(index: number, hosts: number, nodesPer: number) {
  const cluster = `fleet-${index}`;
  const masters = Math.min(3, nodesPer);
  const node = (n: number) => ({
    [`node-${n}`]: { 'mac-address': mac((index * nodesPer + n) % hosts, n % 2) },
  });
  return {
    apiVersion: 'bpa.akraino.org/v1alpha1',
    kind: 'Provisioning',
    metadata: { name: cluster, namespace, labels: { cluster } },
    spec: {
      masters: Array.from({ length: masters }, (_, n) => node(n)),
      workers: Array.from({ length: nodesPer - masters }, (_, i) => node(i + masters)),
    },
  };
}

/** Delivery outcomes by Trigger, outcome and status (one run at a time). */
const deliveryTally = new Map<string, number>();

interface Counters {
  requests: number;
  bytesRead: number;
  peakRssBytes: number;
  rssBytes: number;
  byResource: Record<string, { requests: number; bytes: number }>;
}

function askCounters(child: ChildProcess): Promise<Counters> {
  return new Promise((resolve) => {
    const onMessage = (message: { counters?: Counters }) => {
      if (!message.counters) return;
      child.off('message', onMessage);
      resolve(message.counters);
    };
    child.on('message', onMessage);
    child.send('counters');
  });
}

export interface RunResult {
  hosts: number;
  hostsCreated: number;
  provisioningsCreated: number;
  launched: number;
  burstSeconds?: number;
  hostLookup?: {
    requests: number;
    bytes: number;
    peakRssBytes: number;
    warmRssBytes: number;
    /** Of which BareMetalHost reads (GETs of answering hosts, any re-list). */
    hostRequests: number;
    hostBytes: number;
  };
  others?: { requests: number; bytes: number };
  stoppedBy?: string;
  /** Sweeps the burst needed (lost chain events re-driven), and how many had launched before. */
  sweeps: number;
  launchedBeforeSweep?: number;
  /** What the API server served from the burst's start until all had JobLaunched, every client. */
  apiServer?: RequestCounts;
  /** Of which the bench's own (its creates). */
  benchRequests?: number;
  floor?: { seconds: number; recipe: FloorRecipe };
}

export async function runBurst(options: BurstOptions): Promise<RunResult> {
  const { hosts, provisionings, nodesPer, log } = options;
  const result: RunResult = { hosts, hostsCreated: 0, provisioningsCreated: 0, launched: 0, sweeps: 0 };
  const dir = mkdtempSync(join(tmpdir(), 'bpa-bench-fleet-'));
  const env = { ...process.env };
  if (!env.METAL3_CRDS_DIR && existsSync(join(repoRoot(), '..', 'shared', 'metal3-crds')))
    env.METAL3_CRDS_DIR = join(repoRoot(), '..', 'shared', 'metal3-crds');
  const controlPlane = await startControlPlane({ crds: projectCrds(env).inputs, handleSignals: false });
  let child: ChildProcess | undefined;
  let stopStack: (() => Promise<void>) | undefined;
  let watch: { abort(): void } | undefined;
  const launchedAt = new Map<string, number>();
  try {
    const clients = kubeClients(controlPlane.kubeConfig);
    await createNamespace(controlPlane.kubeConfig, namespace);
    const hostProgress = { done: 0 };
    const creating = performance.now();
    await createHosts(clients, namespace, hosts, hostProgress).finally(
      () => (result.hostsCreated = hostProgress.done),
    );
    log(
      `  ${hosts} BareMetalHosts created with their status in ${((performance.now() - creating) / 1000).toFixed(0)} s`,
    );

    // Every function counting its requests; host-lookup, if asked, in its own process (its RSS).
    const port = await freeLoopbackPort();
    const functionsEnv = {
      BMH_NAMESPACE: namespace,
      SWEEP_NAMESPACES: namespace,
      IP_SOURCES: 'nics',
      LOG_LEVEL: 'warn',
    };
    let hostLookupUrl: string | undefined;
    if (options.hostLookupProcess) {
      child = fork(join(repoRoot(), 'dist', 'bench', 'fleet', 'host-lookup-process.js'), [], {
        env: {
          ...process.env,
          ...functionsEnv,
          BENCH_KUBECONFIG: controlPlane.kubeconfigPath,
          K_SINK: `http://127.0.0.1:${port}/${stackNamespace}/${stackBrokerName}`,
        },
        stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      });
      const [ready] = (await once(child, 'message')) as [{ url: string }];
      hostLookupUrl = ready.url;
    }
    const counting = new Map<FunctionName, CountingKubeConfig>();
    // What the broker did with each Trigger's deliveries during the burst: a lost chain event
    // shows here as a timeout, a retry answered 204 or a drop.
    let tallying = false;
    deliveryTally.clear();
    const stack = await startStack({
      onDelivery: (record) => {
        if (!tallying) return;
        const key = `${record.trigger} ${record.outcome} ${record.status ?? 'no answer'}${record.replied ? ' replied' : ''}${record.outcome === 'retry' || record.outcome === 'dropped' ? ` (${(record.reason ?? '').slice(0, 60)})` : ''}`;
        deliveryTally.set(key, (deliveryTally.get(key) ?? 0) + 1);
      },
      kubeconfig: controlPlane.kubeconfigPath,
      port,
      log: () => undefined,
      logFile: join(dir, 'stack.log'),
      logLevel: 'warn',
      functionsEnv,
      // The sweep re-reads every Provisioning; this measures the event path.
      pingIntervalMs: 3_600_000,
      externalFunctions: hostLookupUrl ? { 'host-lookup': hostLookupUrl } : {},
      functionKubeConfig: (name) => {
        const kubeConfig = new CountingKubeConfig();
        kubeConfig.loadFromFile(controlPlane.kubeconfigPath);
        counting.set(name, kubeConfig);
        return kubeConfig;
      },
    });
    stopStack = () => stack.stop();

    let onLaunch: ((name: string) => void) | undefined;
    /** `<name> <step>` of every step seen True: any new one is progress. */
    const stepsDone = new Set<string>();
    watch = await watchSteps(controlPlane.kubeConfig, namespace, (name, step) => {
      stepsDone.add(`${name} ${step}`);
      if (step !== 'JobLaunched' || launchedAt.has(name)) return;
      launchedAt.set(name, performance.now());
      onLaunch?.(name);
    });
    const target = { ...provisioningsResource, namespace };
    /**
     * Until `count` have JobLaunched. A chain event lost on the way is the sweep's to re-drive;
     * the bench's PingSource is off (it would read every Provisioning), so after `stallMs`
     * without progress (no step of any Provisioning newly True: a slow burst whose first Jobs
     * come after a minute is not stalled) it runs the sweep once, counted, and gives up after
     * `maxSweeps` of them.
     */
    const until = (count: number) =>
      new Promise<void>((resolve, reject) => {
        let progressAt = performance.now();
        let seen = stepsDone.size;
        const timer = setInterval(() => {
          try {
            guardMemory();
          } catch (error) {
            clearInterval(timer);
            reject(error as Error);
            return;
          }
          if (stepsDone.size !== seen) {
            seen = stepsDone.size;
            progressAt = performance.now();
          } else if (performance.now() - progressAt > stallMs) {
            if (result.sweeps >= maxSweeps) {
              clearInterval(timer);
              reject(new Stalled(`no JobLaunched for ${stallMs / 1000} s after ${maxSweeps} sweeps`));
              return;
            }
            result.sweeps++;
            if (result.launchedBeforeSweep === undefined) result.launchedBeforeSweep = launchedAt.size - 1;
            progressAt = performance.now();
            void stack.sweep();
          }
        }, 1000);
        const check = () => {
          if (launchedAt.size < count) return;
          clearInterval(timer);
          resolve();
        };
        onLaunch = check;
        check();
      });

    // Warm-up: one Provisioning through the chain (host-lookup lists and starts its watch).
    const warm = provisioning(provisionings, hosts, nodesPer);
    warm.metadata.name = warm.metadata.labels.cluster = 'fleet-warm-up';
    await clients.custom.createNamespacedCustomObject({ ...target, body: warm });
    await until(1);

    const others = () =>
      [...counting]
        .filter(([name]) => !child || name !== 'host-lookup')
        .map(([, kubeConfig]) => kubeConfig)
        .reduce((sum, k) => ({ requests: sum.requests + k.requests, bytes: sum.bytes + k.bytesRead() }), {
          requests: 0,
          bytes: 0,
        });
    tallying = true;
    const lookupBefore = child ? await askCounters(child) : undefined;
    const othersBefore = others();
    const apiBefore = await readRequestCounts(controlPlane.kubeConfig);
    const started = performance.now();
    const created = { done: 0 };
    const burst = inParallel(
      provisionings,
      async (i) => {
        await clients.custom.createNamespacedCustomObject({
          ...target,
          body: provisioning(i, hosts, nodesPer),
        });
      },
      created,
    ).finally(() => (result.provisioningsCreated = created.done));
    await burst;
    await until(provisionings + 1);
    result.burstSeconds = (performance.now() - started) / 1000;
    result.apiServer = requestDelta(apiBefore, await readRequestCounts(controlPlane.kubeConfig));
    // The bench's own requests in that window: its creates (its watch is counted when it ends).
    result.benchRequests = provisionings;
    const othersAfter = others();
    result.others = {
      requests: othersAfter.requests - othersBefore.requests,
      bytes: othersAfter.bytes - othersBefore.bytes,
    };
    result.launched = launchedAt.size - 1;
    tallying = false;
    log(
      `  deliveries during the burst: ${[...deliveryTally]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([key, count]) => `${key}: ${count}`)
        .join('; ')}`,
    );
    if (child && lookupBefore) logHostLookup(result, lookupBefore, await askCounters(child), log);
    if (options.floor) {
      // The chain stops first: the floor's Provisionings must wake no function.
      watch.abort();
      await stack.stop();
      stopStack = undefined;
      const recipe = floorRecipe(result.apiServer, provisionings);
      const seconds = await writeFloor({
        clients,
        namespace: 'bench-floor',
        systemNamespace: 'bench-floor-system',
        count: provisionings,
        hostsNamespace: namespace,
        hosts,
        provisioning: (i) => provisioning(i, hosts, nodesPer),
        recipe,
      });
      result.floor = { seconds, recipe };
    }
  } catch (error) {
    if (!(error instanceof OutOfMemory) && !(error instanceof Stalled)) throw error;
    result.stoppedBy = error.message;
    result.launched = Math.max(0, launchedAt.size - 1);
    log(`  stopped: ${error.message}`);
  } finally {
    watch?.abort();
    await stopStack?.().catch(() => undefined);
    if (child) {
      child.send('stop');
      await Promise.race([once(child, 'exit'), new Promise((r) => setTimeout(r, 5000))]);
      child.kill();
    }
    await controlPlane.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return result;
}

function logHostLookup(
  result: RunResult,
  lookupBefore: Counters,
  lookupAfter: Counters,
  log: (line: string) => void,
): void {
  const hostsRead = (c: Counters) => c.byResource.baremetalhosts ?? { requests: 0, bytes: 0 };
  result.hostLookup = {
    requests: lookupAfter.requests - lookupBefore.requests,
    bytes: lookupAfter.bytesRead - lookupBefore.bytesRead,
    peakRssBytes: lookupAfter.peakRssBytes,
    warmRssBytes: lookupBefore.rssBytes,
    hostRequests: hostsRead(lookupAfter).requests - hostsRead(lookupBefore).requests,
    hostBytes: hostsRead(lookupAfter).bytes - hostsRead(lookupBefore).bytes,
  };
  log(
    `  host-lookup by resource during the burst: ${Object.entries(lookupAfter.byResource)
      .map(([resource, after]) => {
        const before = lookupBefore.byResource[resource] ?? { requests: 0, bytes: 0 };
        return `${resource} ${after.requests - before.requests} req ${kb(after.bytes - before.bytes)}`;
      })
      .join(', ')}`,
  );
}

/** What the chain wrote per Provisioning, by the API server's count: the floor writes the same. */
export function floorRecipe(counts: RequestCounts, provisionings: number): FloorRecipe {
  const per = (...keys: string[]) =>
    Math.round(keys.reduce((sum, key) => sum + (counts.get(key) ?? 0), 0) / Math.max(1, provisionings));
  return {
    hostPatches: per('PATCH baremetalhosts', 'PUT baremetalhosts'),
    configMaps: per('POST configmaps', 'PATCH configmaps', 'APPLY configmaps'),
    jobs: per('POST jobs', 'APPLY jobs'),
    statusWrites: per('PUT provisionings/status', 'PATCH provisionings/status', 'APPLY provisionings/status'),
    events: per('POST events'),
  };
}

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
