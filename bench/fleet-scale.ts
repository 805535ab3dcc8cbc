import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Watch, type KubeConfig } from '@kubernetes/client-node';
import { createNamespace } from '../local/control-plane/namespaces.js';
import { freeLoopbackPort } from '../local/control-plane/free-port.js';
import { projectCrds, repoRoot, startControlPlane } from '../local/control-plane/index.js';
import { startStack, stackBrokerName, stackNamespace } from '../local/stack/index.js';
import type { FunctionName } from '../local/stack/function-names.js';
import { kubeClients, type KubeClients } from '../shared/k8s/clients.js';
import { bareMetalHostsResource, provisioningsResource } from '../shared/k8s/resources.js';
import { CountingKubeConfig } from './fleet/counting-kube-config.js';
import type { BenchModule } from './module.js';

/**
 * Fleet scale (issue 13 item 1): on a fresh real control plane (etcd + kube-apiserver with
 * Metal3's BareMetalHost CRD) and the embedded stack (broker, local ApiServerSources, the
 * functions), N realistic BareMetalHosts (status.hardware with four NICs, CPU, storage, as
 * Metal3's inspection writes it), then P Provisionings of K nodes applied in one burst. Prints
 * the time until all P have JobLaunched, the API requests and bytes the functions read per
 * Provisioning (an instrumented client: requests counted as authenticated, bytes as read from
 * each socket, TLS included), and host-lookup's peak RSS (it runs in a process of its own). The
 * first Provisioning is a warm-up (host-lookup lists and starts its watch), outside the figures.
 * Guarded: the run stops when MemAvailable falls under 4 GiB and says how far it got.
 *
 * Sizes: BENCH_FLEET_HOSTS (comma-separated runs, default 1000,10000), BENCH_FLEET_PROVISIONINGS
 * (as many as the smallest fleet holds with one owner per host: 99), BENCH_FLEET_NODES (10). Each
 * Provisioning claims its hosts (one PATCH of spec.consumerRef per host, no GET). Goals: the largest run within 1.3x the smallest, and at most
 * 50 KB read by host-lookup per Provisioning after warm-up.
 */
const namespace = 'bench-fleet';
const minAvailableBytes = 4 * 1024 ** 3;
const createConcurrency = 24;

const sizes = (process.env.BENCH_FLEET_HOSTS ?? '1000,10000').split(',').map(Number);
const nodesPer = Number(process.env.BENCH_FLEET_NODES ?? 10);
// One owner per host (contract section 12): the burst and the warm-up need hosts of their own,
// so by default as many Provisionings as the smallest fleet holds (99 of 10 nodes in 1000 hosts,
// plus the warm-up). More than that leaves the rest HostInUse and the run stalls.
const provisionings = Number(
  process.env.BENCH_FLEET_PROVISIONINGS ?? Math.min(1000, Math.floor(Math.min(...sizes) / nodesPer) - 1),
);

const mac = (host: number, nic: number) =>
  `52:54:${nic.toString(16).padStart(2, '0')}:${((host >> 16) & 255).toString(16).padStart(2, '0')}:${((host >> 8) & 255).toString(16).padStart(2, '0')}:${(host & 255).toString(16).padStart(2, '0')}`;
const ip = (host: number, nic: number) => `10.${100 + nic}.${(host >> 8) & 255}.${host & 255}`;
const hostName = (host: number) => `server-${String(host).padStart(5, '0')}`;

/** A BareMetalHost as Metal3 leaves it after inspection: spec, then status (about 2 KB). */
function bareMetalHost(host: number) {
  const name = hostName(host);
  return {
    spec: {
      apiVersion: 'metal3.io/v1alpha1',
      kind: 'BareMetalHost',
      metadata: { name, namespace, labels: { rack: `r${Math.floor(host / 40)}` } },
      spec: {
        online: true,
        bootMode: 'UEFI',
        bootMACAddress: mac(host, 0),
        bmc: {
          address: `redfish+http://10.99.${(host >> 8) & 255}.${host & 255}:8000/redfish/v1/Systems/1`,
          credentialsName: `${name}-bmc-secret`,
        },
        rootDeviceHints: { deviceName: '/dev/sda' },
      },
    },
    status: {
      errorCount: 0,
      errorMessage: '',
      goodCredentials: { credentials: { name: `${name}-bmc-secret`, namespace }, credentialsVersion: '1234' },
      hardwareProfile: 'unknown',
      lastUpdated: '2026-11-30T10:00:00Z',
      operationalStatus: 'OK',
      poweredOn: true,
      provisioning: {
        ID: `5d1f${String(host).padStart(8, '0')}-7c4e-4f1e-9d8a-1f2e3d4c5b6a`,
        bootMode: 'UEFI',
        image: { url: '' },
        // Provisioned already: host-lookup waits for nothing else (contract section 13).
        state: 'externally provisioned',
      },
      provisioningFailCount: 0,
      hardware: {
        cpu: {
          arch: 'x86_64',
          clockMegahertz: 2600,
          count: 32,
          flags: ['avx2', 'sse4_2', 'vmx'],
          model: 'Intel(R) Xeon(R) Gold 6132 CPU @ 2.60GHz',
        },
        firmware: { bios: { date: '06/28/2023', vendor: 'Dell Inc.', version: '2.19.1' } },
        hostname: name,
        nics: [0, 1, 2, 3].map((nic) => ({
          name: `eno${nic + 1}`,
          mac: mac(host, nic),
          ip: nic < 2 ? ip(host, nic) : '',
          model: '0x8086 0x1572',
          pxe: nic === 0,
          speedGbps: nic < 2 ? 25 : 10,
          vlanId: 0,
        })),
        ramMebibytes: 196608,
        storage: [0, 1].map((disk) => ({
          name: `/dev/sd${'ab'[disk]}`,
          hctl: `0:0:${disk}:0`,
          model: 'PERC H740P Mini',
          rotational: false,
          serialNumber: `6d0946600f${String(host).padStart(6, '0')}${disk}`,
          sizeBytes: 960197124096,
          type: 'SSD',
          vendor: 'DELL',
          wwn: `0x6d0946600f${String(host).padStart(6, '0')}`,
        })),
        systemVendor: { manufacturer: 'Dell Inc.', productName: 'PowerEdge R640', serialNumber: `SN${host}` },
      },
    },
  };
}

function provisioning(index: number, hosts: number) {
  const cluster = `fleet-${index}`;
  const node = (n: number) => ({
    [`node-${n}`]: { 'mac-address': mac((index * nodesPer + n) % hosts, n % 2) },
  });
  return {
    apiVersion: 'bpa.akraino.org/v1alpha1',
    kind: 'Provisioning',
    metadata: { name: cluster, namespace, labels: { cluster } },
    spec: {
      masters: [0, 1, 2].map(node),
      workers: Array.from({ length: nodesPer - 3 }, (_, i) => node(i + 3)),
    },
  };
}

/** Delivery outcomes by Trigger, outcome and status (one run at a time). */
const deliveryTally = new Map<string, number>();

class OutOfMemory extends Error {}
class Stalled extends Error {}
const stallMs = 60_000;
const maxSweeps = 3;

function availableBytes(): number {
  const match = /^MemAvailable:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'));
  return match?.[1] ? Number(match[1]) * 1024 : Number.POSITIVE_INFINITY;
}

function guardMemory(): void {
  const available = availableBytes();
  if (available < minAvailableBytes)
    throw new OutOfMemory(`MemAvailable ${(available / 1024 ** 3).toFixed(1)} GiB < 4 GiB`);
}

/** Runs `work` over `count` items, `createConcurrency` at a time, checking memory as it goes. */
async function inParallel(count: number, work: (i: number) => Promise<void>, progress: { done: number }) {
  let next = 0;
  await Promise.all(
    Array.from({ length: createConcurrency }, async () => {
      while (next < count) {
        const i = next++;
        if (i % 100 === 0) guardMemory();
        await work(i);
        progress.done++;
      }
    }),
  );
}

async function createHosts(clients: KubeClients, count: number, progress: { done: number }) {
  const target = { ...bareMetalHostsResource, namespace };
  await inParallel(
    count,
    async (host) => {
      const { spec, status } = bareMetalHost(host);
      const created = (await clients.custom.createNamespacedCustomObject({
        ...target,
        body: spec,
      })) as object;
      await clients.custom.replaceNamespacedCustomObjectStatus({
        ...target,
        name: spec.metadata.name,
        body: { ...created, status },
      });
    },
    progress,
  );
}

/** The chain's steps, in order: a Provisioning that gets one more of them True has progressed. */
const chainSteps = ['HostsResolved', 'InventoryRendered', 'JobLaunched'] as const;

/**
 * Calls `onStep` for each Provisioning and chain step that is True (JobLaunched is the one the
 * burst waits for; the others tell a slow burst from a stalled one). The watch is opened again
 * whenever it ends (the API server closes watches; a loaded one drops them): a new watch starts
 * with every existing object, and a name and step seen twice is the caller's to ignore.
 */
async function watchSteps(
  kubeConfig: KubeConfig,
  onStep: (name: string, step: (typeof chainSteps)[number]) => void,
): Promise<{ abort(): void }> {
  let stopped = false;
  let current: AbortController | undefined;
  const open = async (): Promise<void> => {
    if (stopped) return;
    current = await new Watch(kubeConfig).watch(
      `/apis/bpa.akraino.org/v1alpha1/namespaces/${namespace}/provisionings`,
      {},
      (
        _phase,
        object: { metadata: { name: string }; status?: { conditions?: { type: string; status: string }[] } },
      ) => {
        for (const step of chainSteps)
          if (object.status?.conditions?.some((c) => c.type === step && c.status === 'True'))
            onStep(object.metadata.name, step);
      },
      () => void setTimeout(() => void open(), 500),
    );
  };
  await open();
  return {
    abort: () => {
      stopped = true;
      current?.abort();
    },
  };
}

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

interface RunResult {
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
}

async function runAt(hosts: number, log: (line: string) => void): Promise<RunResult> {
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
    await createHosts(clients, hosts, hostProgress).finally(() => (result.hostsCreated = hostProgress.done));
    log(
      `  ${hosts} BareMetalHosts created with their status in ${((performance.now() - creating) / 1000).toFixed(0)} s`,
    );

    // host-lookup in its own process (its RSS), the other functions in the stack, each counting.
    const port = await freeLoopbackPort();
    const functionsEnv = {
      BMH_NAMESPACE: namespace,
      SWEEP_NAMESPACES: namespace,
      IP_SOURCES: 'nics',
      LOG_LEVEL: 'warn',
    };
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
      externalFunctions: { 'host-lookup': ready.url },
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
    watch = await watchSteps(controlPlane.kubeConfig, (name, step) => {
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
    const warm = provisioning(provisionings, hosts);
    warm.metadata.name = warm.metadata.labels.cluster = 'fleet-warm-up';
    await clients.custom.createNamespacedCustomObject({ ...target, body: warm });
    await until(1);

    const others = () =>
      [...counting.values()].reduce(
        (sum, k) => ({ requests: sum.requests + k.requests, bytes: sum.bytes + k.bytesRead() }),
        {
          requests: 0,
          bytes: 0,
        },
      );
    tallying = true;
    const lookupBefore = await askCounters(child);
    const othersBefore = others();
    const started = performance.now();
    const created = { done: 0 };
    const burst = inParallel(
      provisionings,
      async (i) => {
        await clients.custom.createNamespacedCustomObject({ ...target, body: provisioning(i, hosts) });
      },
      created,
    ).finally(() => (result.provisioningsCreated = created.done));
    await burst;
    await until(provisionings + 1);
    result.burstSeconds = (performance.now() - started) / 1000;
    const lookupAfter = await askCounters(child);
    const othersAfter = others();
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
    tallying = false;
    log(
      `  deliveries during the burst: ${[...deliveryTally]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([key, count]) => `${key}: ${count}`)
        .join('; ')}`,
    );
    result.others = {
      requests: othersAfter.requests - othersBefore.requests,
      bytes: othersAfter.bytes - othersBefore.bytes,
    };
    result.launched = launchedAt.size - 1;
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

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
const mib = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(0)} MiB`;

export const fleetScaleBench: BenchModule = {
  name: `fleet scale: ${provisionings} Provisionings of ${nodesPer} nodes in one burst against ${sizes.join(' and ')} BareMetalHosts`,
  run: async (print) => {
    const results: RunResult[] = [];
    for (const hosts of sizes) {
      const result = await runAt(hosts, print);
      results.push(result);
      const per = (value: number) => value / Math.max(1, provisionings);
      if (result.burstSeconds === undefined || !result.hostLookup || !result.others) {
        print(
          `${hosts} hosts: stopped (${result.stoppedBy}) after ${result.hostsCreated} hosts and ${result.provisioningsCreated} Provisionings created, ${result.launched} launched, ${result.sweeps} sweep(s)`,
        );
        continue;
      }
      print(
        `${hosts} hosts: all ${provisionings} JobLaunched ${result.burstSeconds.toFixed(1)} s after the burst began` +
          (result.sweeps
            ? ` (${result.launchedBeforeSweep} through the events alone, the rest after ${result.sweeps} sweep(s) re-drove lost events)`
            : '') +
          '; ' +
          `host-lookup per Provisioning ${per(result.hostLookup.requests).toFixed(1)} requests, ${kb(per(result.hostLookup.bytes))} read ` +
          `(BareMetalHosts: ${per(result.hostLookup.hostRequests).toFixed(1)} requests, ${kb(per(result.hostLookup.hostBytes))}), ` +
          `RSS ${mib(result.hostLookup.warmRssBytes)} after warm-up, peak ${mib(result.hostLookup.peakRssBytes)}; ` +
          `inventory-render + kud-job-launch per Provisioning ${per(result.others.requests).toFixed(1)} requests, ${kb(per(result.others.bytes))} read`,
      );
    }
    const first = results[0];
    const last = results.at(-1);
    if (first?.burstSeconds && last?.burstSeconds && results.length > 1)
      print(
        `goal: ${last.hosts}-host run ${(last.burstSeconds / first.burstSeconds).toFixed(2)}x the ${first.hosts}-host run (≤ 1.3x); ` +
          `host-lookup reads ${kb((last.hostLookup?.bytes ?? 0) / provisionings)} per Provisioning in all, ` +
          `${kb((last.hostLookup?.hostBytes ?? 0) / provisionings)} of BareMetalHosts (≤ 50 KB)`,
      );
  },
};
