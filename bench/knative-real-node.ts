import http from 'node:http';
import { loadavg } from 'node:os';
import { CoreV1Api, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { createNamespace } from '../local/control-plane/namespaces.js';
import { waitFor } from '../local/control-plane/wait.js';
import { startKnativeStack } from '../local/knative/stack.js';
import { applyLabBareMetalHosts } from '../local/lab/bare-metal-hosts.js';
import { labHosts, labProvisioning, type LabHost } from '../local/lab/lab-definition.js';
import { renderIscLeaseFile } from '../local/lab/lease-file.js';
import { startStackCluster } from '../local/stack/cluster.js';
import { createObjects, mtBroker, waitForKnativeReady } from '../test/support/knative-objects.js';
import { podServiceObjects } from '../test/support/real-node-knative.js';
import { measureApplyToJob } from './apply-to-job.js';

/**
 * Real Knative Eventing on the real node (containerd + kubelet + kube-proxy), everything from
 * images (needs root): the cluster of `bpa cluster` (the project's images), Knative's images
 * imported and its config/ installed, manifests/ applied as `bpa dev --engine knative` does
 * (functions as pods of their images, the Broker, Triggers and ApiServerSources), then
 * - Provisioning apply -> KUD Job created, median of 20 (the leases from a ConfigMap of the lab
 *   namespace: a pod reads no file of this machine);
 * - the MT broker (async in-memory channel) fanning 2,000 events out to 4 subscriber pods,
 *   32 in flight from this process to the ingress pod: events/s in, events/s and deliveries/s out.
 * The subscribers are a counter in Node.js (`node -e`) run from host-lookup's image: it answers
 * 202 and serves its count, so what is measured is Knative, not a subscriber's work.
 */
const runs = 20;
const throughputEvents = 2000;
const warmUp = 200;
const concurrency = 32;
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

export const knativeRealNodeBench = {
  name: 'Knative Eventing on the real node (kubelet + containerd), from images',
  run: async (print: (line: string) => void) => {
    const cluster = await startStackCluster({ node: true, realNode: true, fallBack: false });
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
      await createNamespace(cluster.kubeConfig, labNamespace);
      // The lab's three hosts once per run: a host stays claimed by the Provisioning that named it.
      const hostsOf = (i: number): LabHost[] =>
        labHosts.map((h, k) => ({
          ...h,
          bmhName: `${h.bmhName}-r${i}`,
          mac: `52:54:00:b2:${i.toString(16).padStart(2, '0')}:0${k + 1}`,
        }));
      const allHosts = Array.from({ length: runs }, (_, i) => hostsOf(i)).flat();
      await applyLabBareMetalHosts(cluster.kubeConfig, allHosts, labNamespace);
      await cluster.kubeConfig.makeApiClient(CoreV1Api).createNamespacedConfigMap({
        namespace: labNamespace,
        body: {
          metadata: { name: 'bpa-dhcp-leases' },
          data: { 'dhcpd.leases': renderIscLeaseFile(allHosts.filter((h) => h.inLeaseFile)) },
        },
      });
      const knative = await startKnativeStack({
        kubeConfig: cluster.kubeConfig,
        node,
        config: {
          BMH_NAMESPACE: labNamespace,
          LEASES_SOURCE: `configmap:${labNamespace}/bpa-dhcp-leases/dhcpd.leases`,
        },
        tenantNamespaces: ['default', labNamespace],
      });
      print(
        `Knative Eventing ${knative.install.version} from images, ready in ${(knative.install.readyAfterMs / 1000).toFixed(1)} s; the chain (manifests/, functions as pods) Ready after ${(knative.readyAfterMs / 1000).toFixed(1)} s`,
      );
      const onKnative = await measureApplyToJob({
        kubeConfig: cluster.kubeConfig,
        kubeconfigPath: cluster.kubeconfigPath,
        namespace: labNamespace,
        runs,
        prefix: 'real-node',
        jobNamespace: 'bpa-system',
        provisioningOf: (name, i) => {
          const p = labProvisioning(labNamespace, name) as KubernetesObject & {
            spec: { masters: NodeEntry[]; workers: NodeEntry[] };
          };
          const macOf = new Map(labHosts.map((h, k) => [h.mac, hostsOf(i)[k]!.mac]));
          const move = (entries: NodeEntry[]): NodeEntry[] =>
            entries.map((e) =>
              Object.fromEntries(
                Object.entries(e).map(([label, v]) => [
                  label,
                  { 'mac-address': macOf.get(v['mac-address']) ?? '' },
                ]),
              ),
            );
          return { ...p, spec: { ...p.spec, masters: move(p.spec.masters), workers: move(p.spec.workers) } };
        },
        timeoutMs: 120_000,
      });
      print(
        `apply → Job, real Knative on the real node: median ${onKnative.medianMs.toFixed(0)} ms (min ${onKnative.minMs.toFixed(0)}, max ${onKnative.maxMs.toFixed(0)}, ${runs} runs)`,
      );

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
    } finally {
      await cluster.stop();
    }
  },
};
