import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { locateBinaries, projectCrds, startControlPlane } from '../local/control-plane/index.js';
import type { BenchModule } from './module.js';

/**
 * Control-plane figures: the cold build of each binary (recorded by engines/build.sh
 * in the cache), the warm start-to-ready time of etcd + kube-apiserver and of the CRDs the tests
 * install, and the resident memory of each process right after start.
 */
const warmStarts = 3;

const buildStatsSchema = z.object({
  binary: z.string(),
  wallSeconds: z.number(),
  peakRssKiB: z.number(),
  builtAt: z.string(),
  goVersion: z.string(),
  cores: z.number(),
});

/** VmRSS of a process, in MiB (Linux /proc). */
function rssMiB(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match?.[1] ? Number(match[1]) / 1024 : Number.NaN;
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

export const controlPlaneBench: BenchModule = {
  name: 'control plane (etcd + kube-apiserver)',
  run: async (print) => {
    const binaries = await locateBinaries();
    print(`binaries: ${binaries.assetsDir} (${binaries.source})`);
    for (const name of ['etcd', 'kube-apiserver']) {
      const file = join(binaries.assetsDir, `${name}.build.json`);
      if (!existsSync(file)) {
        print(`cold build ${name}: not recorded (binaries not built by build.sh here)`);
        continue;
      }
      const stats = buildStatsSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
      print(
        `cold build ${name}: ${stats.wallSeconds.toFixed(0)} s wall, ` +
          `${(stats.peakRssKiB / 1024).toFixed(0)} MiB peak RSS (${stats.goVersion}, ${stats.cores} cores, ${stats.builtAt})`,
      );
    }

    const crds = projectCrds();
    const runs: { apiserver: number; crds: number; etcdRss: number; apiserverRss: number }[] = [];
    for (let i = 0; i < warmStarts; i++) {
      const controlPlane = await startControlPlane({ binaries, crds: crds.inputs, handleSignals: false });
      try {
        runs.push({
          apiserver: controlPlane.timings.apiserverReadyMs,
          crds: controlPlane.timings.crdsReadyMs ?? Number.NaN,
          etcdRss: rssMiB(controlPlane.processes.etcd.pid),
          apiserverRss: rssMiB(controlPlane.processes.kubeApiserver.pid),
        });
      } finally {
        await controlPlane.stop();
      }
    }
    print(`CRDs: ${crds.notes.join('; ')}`);
    print(
      `warm start to ready (median of ${warmStarts}): etcd + kube-apiserver ${seconds(median(runs.map((r) => r.apiserver)))}, ` +
        `with CRDs served ${seconds(median(runs.map((r) => r.crds)))}`,
    );
    print(
      `RSS after start (median): etcd ${median(runs.map((r) => r.etcdRss)).toFixed(0)} MiB, ` +
        `kube-apiserver ${median(runs.map((r) => r.apiserverRss)).toFixed(0)} MiB`,
    );
  },
};
