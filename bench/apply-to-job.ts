import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { Watch, type KubeConfig, type V1Job } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { labProvisioning } from '../local/lab/lab-definition.js';

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;

export interface ApplyToJobFigures {
  runs: number;
  medianMs: number;
  minMs: number;
  maxMs: number;
  /** kubectl apply from its start to its exit (process start, discovery, the create), median. */
  kubectlMedianMs: number;
  /** The chain alone: the Provisioning's ADDED seen by a watch to its Job's ADDED, median. */
  chainMedianMs: number;
}

/**
 * Time from `kubectl apply` of a 3-node Provisioning to its KUD Job existing (source event →
 * host-lookup → inventory-render → kud-job-launch, each through the broker, plus kubectl's own
 * start), for `runs` Provisionings applied one after another in `namespace` (whose lab hosts
 * exist). Whatever carries the events: the embedded stack or real Knative.
 */
export async function measureApplyToJob(options: {
  kubeConfig: KubeConfig;
  kubeconfigPath: string;
  namespace: string;
  runs: number;
  /** Cluster names are `<prefix>-<i>`, so two measurements in one namespace never collide. */
  prefix: string;
  /** Where the KUD Jobs appear: the functions' namespace (docs/adr/0013-tenancy.md). Default `namespace`. */
  jobNamespace?: string;
  /**
   * The Provisioning of run `i` (default: the lab's, labProvisioning). A host stays claimed by
   * the Provisioning that named it (HostInUse for the next), so runs on hosts of their own.
   */
  provisioningOf?: (cluster: string, i: number) => object;
  timeoutMs?: number;
}): Promise<ApplyToJobFigures> {
  const jobSeen = new Map<string, (at: number) => void>();
  const createdSeenAt = new Map<string, number>();
  const watchingProvisionings = await new Watch(options.kubeConfig).watch(
    `/apis/bpa.akraino.org/v1alpha1/namespaces/${options.namespace}/provisionings`,
    {},
    (phase, object: { metadata?: { name?: string } }) => {
      if (phase === 'ADDED') createdSeenAt.set(object.metadata?.name ?? '', performance.now());
    },
    () => undefined,
  );
  const abort = await new Watch(options.kubeConfig).watch(
    `/apis/batch/v1/namespaces/${options.jobNamespace ?? options.namespace}/jobs`,
    {},
    (phase, job: V1Job) => {
      if (phase === 'ADDED') jobSeen.get(job.metadata?.name ?? '')?.(performance.now());
    },
    () => undefined,
  );
  try {
    const durations: number[] = [];
    const kubectlDurations: number[] = [];
    const chainDurations: number[] = [];
    for (let i = 0; i < options.runs; i++) {
      const cluster = `${options.prefix}-${i}`;
      const seen = new Promise<number>((resolve) => jobSeen.set(`kud-${cluster}`, resolve));
      const started = performance.now();
      const kubectl = spawn('kubectl', ['--kubeconfig', options.kubeconfigPath, 'apply', '-f', '-'], {
        stdio: ['pipe', 'ignore', 'inherit'],
      });
      kubectl.stdin.end(
        stringify(options.provisioningOf?.(cluster, i) ?? labProvisioning(options.namespace, cluster)),
      );
      const [code] = (await once(kubectl, 'exit')) as [number];
      if (code !== 0) throw new Error(`kubectl apply exited ${code}`);
      kubectlDurations.push(performance.now() - started);
      let timer: NodeJS.Timeout | undefined;
      const timeoutMs = options.timeoutMs ?? 60_000;
      const at = await Promise.race([
        seen,
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`Job kud-${cluster} did not appear within ${timeoutMs / 1000} s`)),
            timeoutMs,
          );
        }),
      ]);
      clearTimeout(timer);
      durations.push(at - started);
      // A watch that missed the ADDED (reconnected) leaves this run out of the chain's median.
      const createdAt = createdSeenAt.get(cluster);
      if (createdAt !== undefined) chainDurations.push(at - createdAt);
    }
    const sorted = [...durations].sort((a, b) => a - b);
    const median = (values: number[]) =>
      values.length
        ? percentile(
            [...values].sort((a, b) => a - b),
            0.5,
          )
        : Number.NaN;
    return {
      runs: options.runs,
      medianMs: percentile(sorted, 0.5),
      minMs: sorted[0]!,
      maxMs: sorted[sorted.length - 1]!,
      kubectlMedianMs: median(kubectlDurations),
      chainMedianMs: median(chainDurations),
    };
  } finally {
    abort.abort();
    watchingProvisionings.abort();
  }
}
