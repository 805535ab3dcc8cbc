import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { startControlPlane } from '../local/control-plane/index.js';
import { locateNodeBinaries, startKubeletNode } from '../local/kubelet-node/index.js';
import type { BenchModule } from './module.js';

/**
 * The real node (local/kubelet-node): the cold builds engines/build.sh recorded, the launcher's
 * start to Node Ready (namespaces, veth, containerd, the pause image imported, kubelet and
 * kube-proxy) against a warm control plane, and the resident memory of containerd, the kubelet
 * and kube-proxy once the node is Ready and again after 20 s idle. Root only.
 */
const starts = 3;

const buildStatsSchema = z.object({
  binary: z.string(),
  builtWith: z.string(),
  wallSeconds: z.number(),
  peakRssKiB: z.number(),
  cores: z.number(),
});

function rssMiB(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match?.[1] ? Number(match[1]) / 1024 : Number.NaN;
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;

export const kubeletNodeBench: BenchModule = {
  name: 'real node (containerd + kubelet + kube-proxy)',
  run: async (print) => {
    if (process.getuid?.() !== 0) {
      print('skipped: the real node needs root');
      return;
    }
    const binaries = await locateNodeBinaries();
    for (const [dir, names] of [
      [binaries.containerdDir, ['containerd']],
      [join(binaries.kubelet, '..'), ['kubelet']],
    ] as const) {
      for (const name of names) {
        const file = join(dir, `${name}.build.json`);
        if (!existsSync(file)) continue;
        const stats = buildStatsSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
        print(
          `cold build ${stats.builtWith}: ${stats.wallSeconds.toFixed(0)} s wall, ` +
            `${(stats.peakRssKiB / 1024).toFixed(0)} MiB peak RSS (${stats.cores} cores)`,
        );
      }
    }
    const controlPlane = await startControlPlane({ controllers: true, handleSignals: false });
    const runs: Array<{ readyMs: number; ready: number[]; idle: number[] }> = [];
    try {
      for (let i = 0; i < starts; i += 1) {
        const node = await startKubeletNode({ controlPlane, binaries });
        try {
          const pids = [
            node.processes.containerd.pid,
            node.processes.kubelet.pid,
            node.processes.kubeProxy.pid,
          ];
          const ready = pids.map(rssMiB);
          await new Promise((resolve) => setTimeout(resolve, 20_000));
          runs.push({ readyMs: node.timings.readyMs, ready, idle: pids.map(rssMiB) });
        } finally {
          await node.stop();
        }
      }
    } finally {
      await controlPlane.stop();
    }
    print(
      `start to Node Ready (median of ${starts}): ${(median(runs.map((run) => run.readyMs)) / 1000).toFixed(2)} s`,
    );
    const names = ['containerd', 'kubelet', 'kube-proxy'];
    for (const [label, key] of [
      ['at Ready', 'ready'],
      ['after 20 s idle', 'idle'],
    ] as const) {
      const figures = names.map(
        (name, i) => `${name} ${median(runs.map((run) => run[key][i] ?? Number.NaN)).toFixed(0)} MiB`,
      );
      print(`RSS ${label} (median): ${figures.join(', ')}`);
    }
  },
};
