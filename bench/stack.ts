import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Watch, type V1Job } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { createNamespace } from '../local/control-plane/namespaces.js';
import { freeLoopbackPort } from '../local/control-plane/free-port.js';
import { applyLabBareMetalHosts } from '../local/lab/bare-metal-hosts.js';
import { labHosts, labProvisioning } from '../local/lab/lab-definition.js';
import { renderIscLeaseFile } from '../local/lab/lease-file.js';
import { startStack } from '../local/stack.js';

/**
 * Embedded stack figure: time from `kubectl apply` of a Provisioning (3 nodes) to its KUD Job
 * existing, i.e. source event → host-lookup → inventory-render → kud-job-launch, each through
 * the broker, plus kubectl's own start. Median of 10 Provisionings applied one after another.
 */
const runs = 10;
const namespace = 'bench-stack';

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;

export const stackBench = {
  name: 'embedded stack: kubectl apply of a Provisioning → KUD Job exists',
  run: async (print: (line: string) => void) => {
    const dir = mkdtempSync(join(tmpdir(), 'bpa-bench-stack-'));
    const leases = join(dir, 'dhcpd.leases');
    writeFileSync(leases, renderIscLeaseFile(labHosts.filter((h) => h.inLeaseFile)));
    const stack = await startStack({
      port: await freeLoopbackPort(),
      leases,
      log: () => undefined,
      logFile: join(dir, 'stack.log'),
      logLevel: 'warn',
      functionsEnv: { BMH_NAMESPACE: namespace },
    });
    const jobSeen = new Map<string, (at: number) => void>();
    let abort: AbortController | undefined;
    try {
      await createNamespace(stack.kubeConfig, namespace);
      await applyLabBareMetalHosts(stack.kubeConfig, labHosts, namespace);
      abort = await new Watch(stack.kubeConfig).watch(
        `/apis/batch/v1/namespaces/${namespace}/jobs`,
        {},
        (phase, job: V1Job) => {
          if (phase === 'ADDED') jobSeen.get(job.metadata?.name ?? '')?.(performance.now());
        },
        () => undefined,
      );
      const durations: number[] = [];
      for (let i = 0; i < runs; i++) {
        const cluster = `bench-${i}`;
        const seen = new Promise<number>((resolve) => jobSeen.set(`kud-${cluster}`, resolve));
        const started = performance.now();
        const kubectl = spawn('kubectl', ['--kubeconfig', stack.kubeconfigPath, 'apply', '-f', '-'], {
          stdio: ['pipe', 'ignore', 'inherit'],
        });
        kubectl.stdin.end(stringify(labProvisioning(namespace, cluster)));
        const [code] = (await once(kubectl, 'exit')) as [number];
        if (code !== 0) throw new Error(`kubectl apply exited ${code}`);
        let timer: NodeJS.Timeout | undefined;
        const at = await Promise.race([
          seen,
          new Promise<never>((_, reject) => {
            timer = setTimeout(
              () => reject(new Error(`Job kud-${cluster} did not appear within 60 s`)),
              60_000,
            );
          }),
        ]);
        clearTimeout(timer);
        durations.push(at - started);
      }
      const sorted = [...durations].sort((a, b) => a - b);
      print(`runs: ${runs} (3-node Provisioning each, applied one after another)`);
      print(`median: ${percentile(sorted, 0.5).toFixed(0)} ms`);
      print(`min / max: ${sorted[0]!.toFixed(0)} / ${sorted[sorted.length - 1]!.toFixed(0)} ms`);
    } finally {
      abort?.abort();
      await stack.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
