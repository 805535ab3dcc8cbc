import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, Watch, type V1Pod } from '@kubernetes/client-node';
import { z } from 'zod';
import { locateBinaries } from '../local/control-plane/index.js';
import { createNamespace } from '../local/control-plane/namespaces.js';
import { busyboxImage } from '../local/kubelet-node/busybox-image.js';
import { startStackCluster, type StackCluster } from '../local/stack/cluster.js';
import { describeError } from '../shared/errors.js';
import type { BenchModule } from './module.js';

/**
 * One-machine cluster figures (issue 16), on the real node as `bpa cluster` runs it (needs
 * root): the cold build of kube-controller-manager and kube-scheduler (recorded by
 * engines/build.sh; one `go build` makes them with kube-apiserver, so the figures are that
 * build's), start-to-ready of the whole cluster (the project's images built or found cached and
 * imported, control plane, controllers, node Ready), the RSS of each process, and pod bound →
 * Ready: the time from the watch showing the scheduler's binding to it showing Ready=True, median
 * of 20 pods created one after another (the busybox image the node holds: `sleep`, no probe).
 */
const pods = 20;
const namespace = 'bench-node';

const buildStatsSchema = z.object({
  binary: z.string(),
  builtWith: z.string().optional(),
  wallSeconds: z.number(),
  peakRssKiB: z.number(),
  builtAt: z.string(),
  goVersion: z.string(),
  cores: z.number(),
});

function rssMiB(pid: number): number {
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match?.[1] ? Number(match[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(p * values.length))] ?? Number.NaN;

const isReady = (pod: V1Pod) =>
  pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/** Creates one pod and resolves with ms from bound (nodeName seen) to Ready, as the watch shows them. */
async function boundToReady(cluster: StackCluster, name: string): Promise<number> {
  const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
  let boundAt: number | undefined;
  let abort: AbortController | undefined;
  const done = new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`pod ${name} not Ready within 60 s`)), 60_000);
    void new Watch(cluster.kubeConfig)
      .watch(
        `/api/v1/namespaces/${namespace}/pods`,
        { fieldSelector: `metadata.name=${name}` },
        (_phase, pod: V1Pod) => {
          const now = performance.now();
          if (boundAt === undefined && pod.spec?.nodeName) boundAt = now;
          if (boundAt !== undefined && isReady(pod)) {
            clearTimeout(timer);
            resolve(now - boundAt);
          }
        },
        (error) => {
          if (error) reject(error instanceof Error ? error : new Error(String(error)));
        },
      )
      .then((controller) => (abort = controller), reject);
  });
  // The watch is open before the pod exists, so no event is missed.
  await new Promise((resolve) => setTimeout(resolve, 200));
  await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name },
      spec: {
        terminationGracePeriodSeconds: 1,
        containers: [
          { name: 'sleep', image: busyboxImage, imagePullPolicy: 'Never', command: ['sleep', 'infinity'] },
        ],
      },
    },
  });
  try {
    return await done;
  } finally {
    abort?.abort();
    await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 }).catch(() => undefined);
  }
}

export const clusterBench: BenchModule = {
  name: 'one-machine cluster (control plane + kube-controller-manager + kube-scheduler + node)',
  run: async (print) => {
    const binaries = await locateBinaries();
    for (const name of ['kube-controller-manager', 'kube-scheduler']) {
      const file = join(binaries.assetsDir, `${name}.build.json`);
      if (!existsSync(file)) {
        print(`cold build ${name}: not recorded (binaries not built by build.sh here)`);
        continue;
      }
      const stats = buildStatsSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
      const together =
        stats.builtWith && stats.builtWith !== name
          ? ` (one go build "${stats.builtWith}" with kube-apiserver)`
          : '';
      print(
        `cold build ${name}: ${stats.wallSeconds.toFixed(0)} s wall, ${(stats.peakRssKiB / 1024).toFixed(0)} MiB peak RSS` +
          `${together}, ${stats.goVersion}, ${stats.cores} cores, ${stats.builtAt}`,
      );
    }

    let cluster: StackCluster;
    const started = Date.now();
    try {
      cluster = await startStackCluster({ fallBack: false });
    } catch (error) {
      print(`skipped: ${describeError(error).message}`);
      return;
    }
    try {
      const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
      const node = cluster.kubeletNode!;
      // Start-to-ready ends when the Node is Ready (startStackCluster returns after registration).
      for (let i = 0; i < 100; i++) {
        const status = await core.readNode({ name: node.name });
        if (status.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      print(
        `start to ready of the whole cluster, node Ready (warm binaries, images cached): ${((Date.now() - started) / 1000).toFixed(2)} s`,
      );
      print(
        `of which images (${Object.keys(cluster.images?.references ?? {}).length}, built or found cached): ${((cluster.images?.buildMs ?? 0) / 1000).toFixed(1)} s; ` +
          `node start to Ready: ${(node.timings.readyMs / 1000).toFixed(1)} s`,
      );
      const processes = cluster.controlPlane.processes;
      const rss = [
        ['etcd', processes.etcd.pid],
        ['kube-apiserver', processes.kubeApiserver.pid],
        ['kube-controller-manager', processes.kubeControllerManager?.pid],
        ['kube-scheduler', processes.kubeScheduler?.pid],
      ] as const;
      const parts = node.processes;
      const nodeRss = [
        ['containerd', parts.containerd.pid],
        ['kubelet', parts.kubelet.pid],
        ['kube-proxy', parts.kubeProxy.pid],
        ...(parts.coredns ? ([['CoreDNS', parts.coredns.pid]] as const) : []),
      ] as const;
      print(
        `RSS after start: ${rss.map(([name, pid]) => `${name} ${pid ? rssMiB(pid).toFixed(0) : '?'} MiB`).join(', ')}; ` +
          `node ${nodeRss.map(([name, pid]) => `${name} ${rssMiB(pid).toFixed(0)} MiB`).join(', ')}`,
      );

      await createNamespace(cluster.kubeConfig, namespace);
      // The `default` ServiceAccount comes from kube-controller-manager; pods need it to be admitted.
      for (let i = 0; i < 100; i++) {
        const ok = await core.readNamespacedServiceAccount({ name: 'default', namespace }).then(
          () => true,
          () => false,
        );
        if (ok) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const latencies: number[] = [];
      for (let i = 0; i < pods; i++) latencies.push(await boundToReady(cluster, `bench-pod-${i}`));
      print(
        `pod bound → Ready, busybox sleep (${pods} pods one after another): median ${median(latencies).toFixed(0)} ms, ` +
          `p90 ${percentile(latencies, 0.9).toFixed(0)} ms, max ${Math.max(...latencies).toFixed(0)} ms`,
      );
    } finally {
      await cluster.stop();
    }
  },
};
