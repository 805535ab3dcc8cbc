import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BatchV1Api, CoreV1Api, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { z } from 'zod';
import { createNamespace } from '../local/control-plane/namespaces.js';
import { shippedFunctionsNamespace } from '../local/control-plane/tenant.js';
import { waitFor } from '../local/control-plane/wait.js';
import { knativeBinaries, knativeBinaryDir } from '../local/knative/binaries.js';
import { startKnativeStack } from '../local/knative/stack.js';
import { applyLabBareMetalHosts } from '../local/lab/bare-metal-hosts.js';
import { labHosts, labProvisioning, type LabHost } from '../local/lab/lab-definition.js';
import { renderIscLeaseFile } from '../local/lab/lease-file.js';
import { startStackCluster } from '../local/stack/cluster.js';
import { startStack } from '../local/stack/index.js';
import { createObjects, mtBroker, waitForKnativeReady } from '../test/support/knative-objects.js';
import { podServiceObjects } from '../test/support/real-node-knative.js';
import { measureApplyToJob, type ApplyToJobFigures } from './apply-to-job.js';
import type { BenchModule } from './module.js';

/**
 * Real Knative Eventing on the real node (containerd + kubelet + kube-proxy), everything from
 * images (needs root): the cluster of `bpa cluster` (the project's images), Knative's images
 * imported and its config/ installed, manifests/ applied as `bpa dev --engine knative` does
 * (functions as pods of their images, the Broker, Triggers and ApiServerSources), then
 * - the cold build of Knative's binaries (engines/build.sh's record of the build that made them);
 * - Provisioning apply -> KUD Job created, median of 20, first through the embedded engine on
 *   the same cluster (the functions in this process), then through real Knative (the functions
 *   as pods); each run on hosts of its own, the leases from a ConfigMap of the lab namespace (a
 *   pod reads no file of this machine; the embedded functions read the same ConfigMap);
 * - the MT broker (async in-memory channel) fanning 2,000 events out to 4 subscriber pods,
 *   32 in flight from this process to the ingress pod: events/s in, events/s and deliveries/s out;
 * - the RSS of each Knative container process once idle.
 * The subscribers are a counter in Node.js (`node -e`) run from host-lookup's image: it answers
 * 202 and serves its count, so what is measured is Knative, not a subscriber's work.
 */
const runs = 20;
const throughputEvents = 2000;
const warmUp = 200;
const concurrency = 32;
/** Knative's lab namespace (the embedded engine's is bench-embedded). */
const labNamespace = 'bench-knative';
/** A Provisioning's node entry: label -> MAC. */
type NodeEntry = Record<string, { 'mac-address': string }>;

const counterScript = `
let n = 0;
require('node:http').createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/count') return res.end(String(n));
  req.resume();
  req.on('end', () => { if (req.method === 'POST') n++; res.statusCode = 202; res.end(); });
}).listen(8080);`;

const buildRecordSchema = z.object({
  wallSeconds: z.number(),
  peakRssKiB: z.number(),
  goVersion: z.string(),
  cores: z.number(),
  note: z.string().optional(),
});

/** engines/build.sh's record of the build that made each Knative binary set. */
function buildRecords(print: (line: string) => void) {
  for (const [set, names] of Object.entries(knativeBinaries) as [
    keyof typeof knativeBinaries,
    readonly string[],
  ][]) {
    const dir = knativeBinaryDir(set);
    const record = join(dir, `${names[0]}.build.json`);
    if (!existsSync(record)) {
      print(`${set}: no build record in ${dir}`);
      continue;
    }
    const r = buildRecordSchema.parse(JSON.parse(readFileSync(record, 'utf8')));
    print(
      `${set} build: ${r.wallSeconds.toFixed(0)} s wall, ${(r.peakRssKiB / 1024).toFixed(0)} MiB peak RSS (${names.length} binaries, one go build, ${r.goVersion}, ${r.cores} cores${r.note ? `, ${r.note}` : ''})`,
    );
  }
}

/**
 * RSS of every process of a Knative image, by binary: its containers run `/ko-app/<binary>`
 * (local/images/knative.ts), and the node's processes are this machine's, seen by ps.
 */
function knativeRss(): Map<string, number[]> {
  const out = execFileSync('ps', ['-eo', 'rss=,args='], { encoding: 'utf8' });
  const byBinary = new Map<string, number[]>();
  for (const line of out.split('\n')) {
    const match = /^\s*(\d+)\s+\/ko-app\/(\S+)/.exec(line);
    if (!match) continue;
    byBinary.set(match[2]!, [...(byBinary.get(match[2]!) ?? []), Number(match[1]) / 1024]);
  }
  return byBinary;
}

const settleMs = 30_000;

const applyToJobLine = (what: string, f: ApplyToJobFigures) =>
  `apply → Job, ${what}: median ${f.medianMs.toFixed(0)} ms (min ${f.minMs.toFixed(0)}, max ${f.maxMs.toFixed(0)}, ${f.runs} runs; ` +
  `of it kubectl apply ${f.kubectlMedianMs.toFixed(0)} ms, the chain from the Provisioning's ADDED to the Job's ${f.chainMedianMs.toFixed(0)} ms, medians)`;

/** A counting subscriber as a Deployment and Service; resolves with its pod's count URL. */
async function startCounter(kubeConfig: KubeConfig, namespace: string, name: string, image: string) {
  await createObjects(
    kubeConfig,
    namespace,
    podServiceObjects(undefined, name, image, ['/usr/local/bin/node', '-e', counterScript]),
  );
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const ip = await waitFor(
    async () =>
      (await core.listNamespacedPod({ namespace, labelSelector: `app=${name}` })).items.find((p) =>
        p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      )?.status?.podIP,
    { what: `${name} Ready`, timeoutMs: 120_000, intervalMs: 300 },
  );
  return {
    ref: { apiVersion: 'v1', kind: 'Service', name },
    count: async () => Number(await (await fetch(`http://${ip}:8080/count`)).text()),
  };
}

async function postEvents(url: string, count: number): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < count) {
      const id = `bench-${next++}`;
      await new Promise<void>((resolve, reject) => {
        const body = Buffer.from('{"n":1}');
        const request = http.request(
          url,
          {
            method: 'POST',
            agent,
            headers: {
              'ce-specversion': '1.0',
              'ce-id': id,
              'ce-type': 'bench.fanout',
              'ce-source': '/bench',
              'content-type': 'application/json',
              'content-length': String(body.length),
            },
          },
          (response) => {
            response.resume();
            response.on('end', () =>
              response.statusCode === 202
                ? resolve()
                : reject(new Error(`ingress answered ${response.statusCode}`)),
            );
          },
        );
        request.on('error', reject);
        request.end(body);
      });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  agent.destroy();
  return performance.now() - started;
}

/** The lab's three hosts for run `i` of a measurement: a host stays claimed by the Provisioning that named it. */
const hostsOf = (i: number): LabHost[] =>
  labHosts.map((h, k) => ({
    ...h,
    bmhName: `${h.bmhName}-r${i}`,
    mac: `52:54:00:b2:${i.toString(16).padStart(2, '0')}:0${k + 1}`,
  }));

/** The lab's Provisioning of run `i`, on hostsOf(i). */
function provisioningOn(namespace: string, name: string, i: number): object {
  const p = labProvisioning(namespace, name) as KubernetesObject & {
    spec: { masters: NodeEntry[]; workers: NodeEntry[] };
  };
  const macOf = new Map(labHosts.map((h, k) => [h.mac, hostsOf(i)[k]!.mac]));
  const move = (entries: NodeEntry[]): NodeEntry[] =>
    entries.map((e) =>
      Object.fromEntries(
        Object.entries(e).map(([label, v]) => [label, { 'mac-address': macOf.get(v['mac-address']) ?? '' }]),
      ),
    );
  return { ...p, spec: { ...p.spec, masters: move(p.spec.masters), workers: move(p.spec.workers) } };
}

/**
 * A namespace of BareMetalHosts for `runs` Provisionings (hosts of runs `first`..), and the
 * lease ConfigMap host-lookup reads there; resolves with its LEASES_SOURCE.
 */
async function prepareLab(kubeConfig: KubeConfig, namespace: string, first: number): Promise<string> {
  await createNamespace(kubeConfig, namespace);
  const hosts = Array.from({ length: runs }, (_, i) => hostsOf(first + i)).flat();
  await applyLabBareMetalHosts(kubeConfig, hosts, namespace);
  await kubeConfig.makeApiClient(CoreV1Api).createNamespacedConfigMap({
    namespace,
    body: {
      metadata: { name: 'bpa-dhcp-leases' },
      data: { 'dhcpd.leases': renderIscLeaseFile(hosts.filter((h) => h.inLeaseFile)) },
    },
  });
  return `configmap:${namespace}/bpa-dhcp-leases/dhcpd.leases`;
}

/** Deletes the KUD Jobs of one measurement (and their pods), so they do not load the next. */
async function deleteKudJobs(kubeConfig: KubeConfig, prefix: string) {
  const batch = kubeConfig.makeApiClient(BatchV1Api);
  for (let i = 0; i < runs; i++)
    await batch
      .deleteNamespacedJob({
        name: `kud-${prefix}-${i}`,
        namespace: shippedFunctionsNamespace,
        propagationPolicy: 'Background',
      })
      .catch(() => undefined);
}

export const knativeBench: BenchModule = {
  name: 'Knative Eventing on the real node (kubelet + containerd), from images, beside the embedded engine',
  run: async (print) => {
    buildRecords(print);
    const cluster = await startStackCluster({ fallBack: false });
    const dir = mkdtempSync(join(tmpdir(), 'bpa-bench-knative-'));
    try {
      const node = cluster.kubeletNode;
      const image = cluster.images?.references['host-lookup'];
      if (!node || !image) throw new Error('no real node or no host-lookup image');
      print(`cluster (real node, project images) ready in ${(cluster.readyMs / 1000).toFixed(1)} s`);
      print(
        `load before: ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')}`,
      );
      await createNamespace(cluster.kubeConfig, shippedFunctionsNamespace);

      // The embedded engine first, on the same cluster: the functions in this process (as the
      // admin kubeconfig), the KUD Jobs in bpa-system from the images the node holds. In a
      // namespace of its own, which Knative's functions (onboarded namespaces only) leave alone.
      const embeddedNamespace = 'bench-embedded';
      const embeddedLeases = await prepareLab(cluster.kubeConfig, embeddedNamespace, 0);
      const embedded = await startStack({
        kubeconfig: cluster.kubeconfigPath,
        log: () => undefined,
        logFile: join(dir, 'stack.log'),
        logLevel: 'warn',
        functionsEnv: {
          ...cluster.functionsEnv,
          BMH_NAMESPACE: embeddedNamespace,
          LEASES_SOURCE: embeddedLeases,
        },
      });
      let onEmbedded: ApplyToJobFigures;
      try {
        onEmbedded = await measureApplyToJob({
          kubeConfig: cluster.kubeConfig,
          kubeconfigPath: cluster.kubeconfigPath,
          namespace: embeddedNamespace,
          runs,
          prefix: 'embedded',
          jobNamespace: shippedFunctionsNamespace,
          provisioningOf: (name, i) => provisioningOn(embeddedNamespace, name, i),
        });
      } finally {
        await embedded.stop();
      }
      await deleteKudJobs(cluster.kubeConfig, 'embedded');
      print(applyToJobLine('embedded engine (functions in this process)', onEmbedded));

      const knativeLeases = await prepareLab(cluster.kubeConfig, labNamespace, runs);
      const knative = await startKnativeStack({
        kubeConfig: cluster.kubeConfig,
        node,
        config: { BMH_NAMESPACE: labNamespace, LEASES_SOURCE: knativeLeases },
        tenantNamespaces: ['default', labNamespace],
      });
      print(
        `Knative Eventing ${knative.install.version} from images, ready in ${(knative.install.readyAfterMs / 1000).toFixed(1)} s; the chain (manifests/, functions as pods) Ready after ${(knative.readyAfterMs / 1000).toFixed(1)} s`,
      );
      // Knative's controllers and the new pods settle for a while after Ready (their first
      // resyncs, the functions' first lists): apply as a user would, not in that first minute.
      await new Promise((resolve) => setTimeout(resolve, settleMs));
      print(
        `load after ${settleMs / 1000} s settling: ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')}`,
      );
      const onKnative = await measureApplyToJob({
        kubeConfig: cluster.kubeConfig,
        kubeconfigPath: cluster.kubeconfigPath,
        namespace: labNamespace,
        runs,
        prefix: 'knative',
        jobNamespace: shippedFunctionsNamespace,
        provisioningOf: (name, i) => provisioningOn(labNamespace, name, runs + i),
        timeoutMs: 120_000,
      });
      await deleteKudJobs(cluster.kubeConfig, 'knative');
      print(applyToJobLine('real Knative (functions as pods)', onKnative));

      const ns = 'bench-fanout';
      await createNamespace(cluster.kubeConfig, ns);
      const counters = await Promise.all(
        [1, 2, 3, 4].map((i) => startCounter(cluster.kubeConfig, ns, `subscriber-${i}`, image)),
      );
      await createObjects(cluster.kubeConfig, ns, [
        mtBroker('default', { async: true }),
        ...counters.map(
          (c, i) =>
            ({
              apiVersion: 'eventing.knative.dev/v1',
              kind: 'Trigger',
              metadata: { name: `subscriber-${i + 1}` },
              spec: {
                broker: 'default',
                filter: { attributes: { type: 'bench.fanout' } },
                subscriber: { ref: c.ref },
              },
            }) as KubernetesObject,
        ),
      ]);
      for (const name of ['default', 'subscriber-1', 'subscriber-2', 'subscriber-3', 'subscriber-4'])
        await waitForKnativeReady(cluster.kubeConfig, {
          apiVersion: 'eventing.knative.dev/v1',
          kind: name === 'default' ? 'Broker' : 'Trigger',
          namespace: ns,
          name,
        });
      const ingress = `${knative.ingressBase}/${ns}/default`;
      const countAll = () => Promise.all(counters.map((c) => c.count()));
      // Ready Triggers are not yet subscribers the IMC dispatcher fans out to: until its config
      // has them, an accepted event reaches nobody (seen here: the first 278 of a run). So warm up
      // until every subscriber gets events, then count from what they have.
      await waitFor(
        async () => {
          await postEvents(ingress, warmUp / 10);
          await new Promise((resolve) => setTimeout(resolve, 500));
          return (await countAll()).every((c) => c > 0) ? true : undefined;
        },
        { what: 'the first deliveries to every subscriber', timeoutMs: 120_000, intervalMs: 100 },
      );
      await postEvents(ingress, warmUp);
      let baseline = await countAll();
      for (let stable = 0; stable < 5;) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        const now = await countAll();
        stable = now.every((c, i) => c === baseline[i]) ? stable + 1 : 0;
        baseline = now;
      }
      const started = performance.now();
      const acceptedMs = await postEvents(ingress, throughputEvents);
      for (;;) {
        const counts = await countAll();
        if (counts.every((c, i) => c >= baseline[i]! + throughputEvents)) break;
        if (performance.now() - started > 300_000)
          throw new Error(
            `subscribers got ${counts.map((c, i) => c - baseline[i]!).join(', ')} of ${throughputEvents}`,
          );
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const deliveredMs = performance.now() - started;
      print(
        `real MT broker on the real node: ${throughputEvents} events accepted in ${(acceptedMs / 1000).toFixed(1)} s (${((throughputEvents * 1000) / acceptedMs).toFixed(0)} events/s in), all delivered to 4 subscribers in ${(deliveredMs / 1000).toFixed(1)} s (${((throughputEvents * 1000) / deliveredMs).toFixed(0)} events/s, ${((4 * throughputEvents * 1000) / deliveredMs).toFixed(0)} deliveries/s)`,
      );
      print(
        `load after: ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')}`,
      );
      // Idle again: what each Knative process holds after the run.
      await new Promise((resolve) => setTimeout(resolve, 5000));
      for (const [name, rss] of [...knativeRss()].sort(([a], [b]) => a.localeCompare(b)))
        print(`RSS ${name.padEnd(26)} ${rss.map((m) => `${m.toFixed(0)} MiB`).join(', ')}`);
    } finally {
      await cluster.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
