import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { softwareInstallConfigSchema } from '../functions/software-install/config.js';
import { runInstallJob } from '../functions/software-install/install-job/run.js';
import { silentLogger } from '../shared/log.js';
import {
  createNamespace,
  deleteNamespace,
  projectCrds,
  startControlPlane,
} from '../local/control-plane/index.js';
import { startDebianHosts, type DebianHosts } from '../test/support/debian-host.js';
import type { BenchModule } from './module.js';

/**
 * The install Job's runner on real Debian roots (real sshd, real apt-get and dpkg, local apt
 * repository; test/support/debian-host.ts) against a real kube-apiserver: 3 Softwares of one
 * 20-host cluster started at once, time until all three are Ready, against the same 3 Softwares
 * on a one-host cluster (ratio); and the peak number of install runs at once on any one host,
 * sampled from /proc every 20 ms (must be 1: the per-host Lease). Needs root.
 */
const hostCount = 20;
const softwares = [
  { name: 'sw-hello', packages: ['hello'] },
  { name: 'sw-tree', packages: ['tree'] },
  { name: 'sw-slow', packages: ['bpa-test-slow'] },
];
const group = { group: 'bpa.akraino.org', version: 'v1alpha1', plural: 'softwares' } as const;

/** Install runs (the install script's shell, one per SSH session) per host mount namespace, sampled. */
class AptSampler {
  readonly peakByHost = new Map<string, number>();
  samples = 0;
  private timer?: NodeJS.Timeout;

  constructor(private readonly namespaces: ReadonlyMap<string, string>) {}

  start() {
    this.timer = setInterval(() => this.sample(), 20);
  }

  stop() {
    clearInterval(this.timer);
  }

  /** Synchronous on purpose: one consistent look at /proc, short enough to repeat every 20 ms. */
  private sample() {
    const runs: { pid: string; parent: string; host: string }[] = [];
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      try {
        const command = readFileSync(`/proc/${pid}/cmdline`, 'latin1');
        if (!command.startsWith('sh\0-c\0apt_get()')) continue;
        const host = this.namespaces.get(readlinkSync(`/proc/${pid}/ns/mnt`));
        // stat: "pid (comm) state ppid ..."; comm is "sh" here.
        const parent = readFileSync(`/proc/${pid}/stat`, 'latin1').split(' ')[3] ?? '';
        if (host) runs.push({ pid, parent, host });
      } catch {
        // The process ended while we looked.
      }
    }
    // The script's shell forks before each command it runs: a child not yet exec'd is the same run.
    const pids = new Set(runs.map((r) => r.pid));
    const counts = new Map<string, number>();
    for (const run of runs) if (!pids.has(run.parent)) counts.set(run.host, (counts.get(run.host) ?? 0) + 1);
    for (const [host, count] of counts)
      this.peakByHost.set(host, Math.max(this.peakByHost.get(host) ?? 0, count));
    this.samples++;
  }
}

async function installAll(kubeConfig: KubeConfig, namespace: string, lab: DebianHosts, hosts: number) {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  await createNamespace(kubeConfig, namespace);
  await core.createNamespacedSecret({
    namespace,
    body: {
      metadata: { name: 'ssh-key-secret' },
      data: { id_rsa: Buffer.from(lab.privateKey).toString('base64') },
    },
  });
  const data: Record<string, string> = {};
  lab.hosts.slice(0, hosts).forEach((host, index) => {
    data[index === 0 ? 'MASTER_m0' : `WORKER_w${index}`] = host.ip;
  });
  await core.createNamespacedConfigMap({
    namespace,
    body: { metadata: { name: 'bench-configmap', labels: { cluster: 'bench' } }, data },
  });
  const created = await Promise.all(
    softwares.map(
      async ({ name, packages }) =>
        (await custom.createNamespacedCustomObject({
          ...group,
          namespace,
          body: {
            apiVersion: 'bpa.akraino.org/v1alpha1',
            kind: 'Software',
            metadata: { name, labels: { cluster: 'bench' } },
            spec: { masterSoftware: packages, workerSoftware: packages },
          },
        })) as { metadata: { name: string; generation: number } },
    ),
  );
  const config = softwareInstallConfigSchema.parse({
    SSH_USER: 'root',
    SSH_PORT: String(lab.port),
    SSH_KNOWN_HOSTS: undefined,
    INSTALL_RETRY_DELAY_SECONDS: '1',
  });
  const started = performance.now();
  const outcomes = await Promise.all(
    created.map((software, index) =>
      runInstallJob(
        { kubeConfig, config, log: silentLogger, instance: `bench-${index}` },
        { namespace, name: software.metadata.name, generation: software.metadata.generation },
      ),
    ),
  );
  const elapsedMs = performance.now() - started;
  const failed = outcomes.filter((o) => o.kind !== 'installed');
  if (failed.length > 0) throw new Error(`not all installed: ${JSON.stringify(failed).slice(0, 2000)}`);
  await deleteNamespace(kubeConfig, namespace);
  return elapsedMs;
}

export const softwareLifecycleBench: BenchModule = {
  name: `software install Jobs: ${softwares.length} Softwares x ${hostCount} real Debian hosts (apt through sshd)`,
  run: async (print) => {
    if (process.getuid?.() !== 0) {
      print('skipped: needs root (mount namespaces, sshd)');
      return;
    }
    const controlPlane = await startControlPlane({ crds: projectCrds().inputs, handleSignals: false });
    // Two labs, so that neither run finds packages another already installed.
    const single = await startDebianHosts({ count: 1, firstAddress: 120 });
    const many = await startDebianHosts({ count: hostCount, firstAddress: 130 });
    try {
      const namespaces = new Map<string, string>();
      for (const host of [...single.hosts, ...many.hosts]) {
        const ns = await host.mountNamespace();
        if (ns) namespaces.set(ns, host.ip);
      }
      const sampler = new AptSampler(namespaces);
      sampler.start();
      const oneMs = await installAll(controlPlane.kubeConfig, 'bench-sw-one', single, 1);
      const manyMs = await installAll(controlPlane.kubeConfig, 'bench-sw-many', many, hostCount);
      sampler.stop();
      const peak = Math.max(0, ...sampler.peakByHost.values());
      print(
        `one host, ${softwares.length} Softwares at once: all Ready after ${(oneMs / 1000).toFixed(2)} s`,
      );
      print(
        `${hostCount} hosts, ${softwares.length} Softwares at once: all Ready after ${(manyMs / 1000).toFixed(2)} s ` +
          `(${(manyMs / oneMs).toFixed(2)}x one host; 2 cores run all ${hostCount * softwares.length} apt runs)`,
      );
      print(
        `peak install runs at once on one host: ${peak} (${sampler.samples} samples of /proc, one every 20 ms at best, ` +
          `${sampler.peakByHost.size} hosts seen running apt; must be 1)`,
      );
    } finally {
      await many.stopAll();
      await single.stopAll();
      await controlPlane.stop();
    }
  },
};
