import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubernetesObject } from '@kubernetes/client-node';
import { createNamespace } from '../local/control-plane/namespaces.js';
import { repoRoot } from '../local/control-plane/repo-root.js';
import { knativeBinaries, knativeBinaryDir } from '../local/knative/binaries.js';
import { startKnativeStack } from '../local/knative/stack.js';
import { applyLabBareMetalHosts } from '../local/lab/bare-metal-hosts.js';
import { labHosts } from '../local/lab/lab-definition.js';
import { renderIscLeaseFile } from '../local/lab/lease-file.js';
import { startStack } from '../local/stack/index.js';
import { startStackCluster } from '../local/stack/cluster.js';
import {
  brokerIngressBase,
  createObjects,
  mtBroker,
  startRecorder,
  waitForKnativeReady,
} from '../test/support/knative-objects.js';
import { measureApplyToJob } from './apply-to-job.js';

/**
 * Knative figures, one run on the one-machine cluster (needs root):
 * - cold build time of the Knative binaries (engines/build.sh's record of the build that made them);
 * - Provisioning apply → KUD Job created, median of 20, through the embedded broker and then
 *   through real Knative Eventing on the same cluster (the functions in this process, then as pods);
 * - events/s through the real MT channel broker (async in-memory channel) to 4 subscribers
 *   (event recorder pods), 2,000 events, 32 in flight from this process;
 * - RSS of each Knative process once idle.
 */
const runs = 20;
const throughputEvents = 2000;
const concurrency = 32;
const labNamespace = 'bench-knative';

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
    const r = JSON.parse(readFileSync(record, 'utf8')) as {
      wallSeconds: number;
      peakRssKiB: number;
      goVersion: string;
      cores: number;
      note?: string;
    };
    print(
      `${set} build: ${r.wallSeconds.toFixed(0)} s wall, ${(r.peakRssKiB / 1024).toFixed(0)} MiB peak RSS (${names.length} binaries, one go build, ${r.goVersion}, ${r.cores} cores${r.note ? `, ${r.note}` : ''})`,
    );
  }
}

/** RSS of every running process of a Knative binary, by binary. */
function knativeRss(): Map<string, number[]> {
  const dir = knativeBinaryDir('knative');
  const out = execFileSync('ps', ['-eo', 'rss=,args='], { encoding: 'utf8' });
  const byBinary = new Map<string, number[]>();
  for (const line of out.split('\n')) {
    const match = /^\s*(\d+)\s+(\S+)/.exec(line);
    if (!match || !match[2]!.startsWith(`${dir}/`)) continue;
    const name = match[2]!.slice(dir.length + 1);
    byBinary.set(name, [...(byBinary.get(name) ?? []), Number(match[1]) / 1024]);
  }
  return byBinary;
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

export const knativeBench = {
  name: 'Knative Eventing (real, on the one-machine cluster) beside the embedded engine',
  run: async (print: (line: string) => void) => {
    buildRecords(print);
    const dir = mkdtempSync(join(tmpdir(), 'bpa-bench-knative-'));
    const leases = join(dir, 'dhcpd.leases');
    writeFileSync(leases, renderIscLeaseFile(labHosts.filter((h) => h.inLeaseFile)));
    const cluster = await startStackCluster({
      node: true,
      fallBack: false,
      extraImageMaps: [join(repoRoot(), 'test', 'fixtures', 'node', 'images.yaml')],
    });
    try {
      print(
        `load before: ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')}`,
      );
      await createNamespace(cluster.kubeConfig, labNamespace);
      await applyLabBareMetalHosts(cluster.kubeConfig, labHosts, labNamespace);
      // The KUD Jobs' image is not in the node's map: their pods wait, nothing runs.
      const kudImage = 'bpa.local/bench/kud-not-run:1';
      const embedded = await startStack({
        kubeconfig: cluster.kubeconfigPath,
        leases,
        log: () => undefined,
        logFile: join(dir, 'stack.log'),
        logLevel: 'warn',
        functionsEnv: { BMH_NAMESPACE: labNamespace, KUD_IMAGE: kudImage },
      });
      let figures;
      try {
        figures = await measureApplyToJob({
          kubeConfig: cluster.kubeConfig,
          kubeconfigPath: cluster.kubeconfigPath,
          namespace: labNamespace,
          runs,
          prefix: 'embedded',
        });
      } finally {
        await embedded.stop();
      }
      print(
        `apply → Job, embedded broker: median ${figures.medianMs.toFixed(0)} ms (min ${figures.minMs.toFixed(0)}, max ${figures.maxMs.toFixed(0)}, ${runs} runs)`,
      );

      const knative = await startKnativeStack({
        kubeConfig: cluster.kubeConfig,
        config: { BMH_NAMESPACE: labNamespace, LEASES_SOURCE: leases, KUD_IMAGE: kudImage },
      });
      print(
        `Knative Eventing ${knative.install.version} installed and ready in ${(knative.install.readyAfterMs / 1000).toFixed(1)} s; the chain (manifests/) Ready after ${(knative.readyAfterMs / 1000).toFixed(1)} s`,
      );
      const onKnative = await measureApplyToJob({
        kubeConfig: cluster.kubeConfig,
        kubeconfigPath: cluster.kubeconfigPath,
        namespace: labNamespace,
        runs,
        prefix: 'knative',
        timeoutMs: 120_000,
      });
      print(
        `apply → Job, real Knative: median ${onKnative.medianMs.toFixed(0)} ms (min ${onKnative.minMs.toFixed(0)}, max ${onKnative.maxMs.toFixed(0)}, ${runs} runs)`,
      );

      // Fan-out through the real MT broker to 4 recorder pods.
      const ns = 'bench-fanout';
      await createNamespace(cluster.kubeConfig, ns);
      const recorders = await Promise.all(
        [1, 2, 3, 4].map((i) => startRecorder(cluster.kubeConfig, ns, `subscriber-${i}`)),
      );
      await createObjects(cluster.kubeConfig, ns, [
        mtBroker('default', { async: true }),
        ...recorders.map(
          (r, i) =>
            ({
              apiVersion: 'eventing.knative.dev/v1',
              kind: 'Trigger',
              metadata: { name: `subscriber-${i + 1}` },
              spec: {
                broker: 'default',
                filter: { attributes: { type: 'bench.fanout' } },
                subscriber: { ref: r.ref, uri: '/ok' },
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
      const ingress = `${await brokerIngressBase(cluster.kubeConfig)}/${ns}/default`;
      await postEvents(ingress, 200); // warm-up
      const started = performance.now();
      const acceptedMs = await postEvents(ingress, throughputEvents);
      const expected = 200 + throughputEvents;
      for (;;) {
        const counts = await Promise.all(recorders.map(async (r) => (await r.received()).length));
        if (counts.every((c) => c >= expected)) break;
        if (performance.now() - started > 300_000)
          throw new Error(`subscribers got ${counts.join(', ')} of ${expected}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      const deliveredMs = performance.now() - started;
      print(
        `real MT broker: ${throughputEvents} events accepted in ${(acceptedMs / 1000).toFixed(1)} s (${((throughputEvents * 1000) / acceptedMs).toFixed(0)} events/s in), all delivered to 4 subscribers in ${(deliveredMs / 1000).toFixed(1)} s (${((throughputEvents * 1000) / deliveredMs).toFixed(0)} events/s, ${((4 * throughputEvents * 1000) / deliveredMs).toFixed(0)} deliveries/s)`,
      );
      await new Promise((resolve) => setTimeout(resolve, 5000));
      for (const [name, rss] of [...knativeRss()].sort(([a], [b]) => a.localeCompare(b)))
        print(`RSS ${name.padEnd(26)} ${rss.map((m) => `${m.toFixed(0)} MiB`).join(', ')}`);
      print(
        `load after: ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')}`,
      );
    } finally {
      await cluster.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
