/**
 * Load: 50 Provisionings of 10 nodes each (50 clusters, 500 BareMetalHosts) applied at once and
 * driven through the chain concurrently; then 200 Softwares over 10 two-node clusters spread on
 * 20 real sshd hosts, delivered at once. Everything completes, nothing is created or installed
 * twice. The functions run in this process, so the figure printed is this process's peak RSS
 * during each phase (sampled every 50 ms), next to the RSS before it.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { describeOnNode } from '../support/node.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { useTestCluster } from '../support/cluster.js';
import { type SshHosts } from '../support/sshd.js';
import { startNodeSshHosts } from '../support/node-lab-hosts.js';
import { sourceEvent } from '../integration/functions/support/chain-harness.js';
import {
  createBareMetalHost,
  createProvisioning,
  createReadyProvisioning,
} from '../integration/functions/support/fixtures.js';
import { FaultTally } from './report/tally.js';
import { FaultyChain, conditionsOf, derivedObjects, isTrue } from './support/faulty-chain.js';
import { clusterProvisioning, createSoftware, nodeMac, prepareNamespace } from './support/lab-cluster.js';

const cluster = useTestCluster();
const tally = new FaultTally(import.meta.url);
const provisionings = 50;
const nodesPerCluster = 10;
const softwareClusters = 10;
const softwaresPerCluster = 20;

/** Runs `work` on every item, `limit` at a time. */
async function inParallel<T>(
  items: readonly T[],
  limit: number,
  work: (item: T, index: number) => Promise<void>,
) {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const index = next++;
        await work(items[index] as T, index);
      }
    }),
  );
}

/** Peak RSS while `work` runs. */
async function measureRss<T>(
  work: () => Promise<T>,
): Promise<{ result: T; beforeMb: number; peakMb: number }> {
  const mb = (bytes: number) => Math.round(bytes / 1048576);
  const before = process.memoryUsage().rss;
  let peak = before;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50);
  try {
    const result = await work();
    peak = Math.max(peak, process.memoryUsage().rss);
    return { result, beforeMb: mb(before), peakMb: mb(peak) };
  } finally {
    clearInterval(timer);
  }
}

describeOnNode('load', () => {
  let lab: SshHosts;
  let chain: FaultyChain;
  let dir: string;

  beforeAll(async () => {
    lab = await startNodeSshHosts({ count: 20 });
    dir = await mkdtemp(join(tmpdir(), 'bpa-load-'));
    const { knownHostsPath } = await prepareNamespace(cluster.kubeConfig, cluster.namespace, lab, dir);
    const hosts = Array.from({ length: provisionings * nodesPerCluster }, (_, i) => i);
    await inParallel(hosts, 16, async (i) => {
      const c = Math.floor(i / nodesPerCluster);
      const n = i % nodesPerCluster;
      const mac = nodeMac(100 + c, n);
      await createBareMetalHost(cluster.kubeConfig, {
        name: `load-c${c}-n${n}`,
        namespace: cluster.namespace,
        bootMac: mac,
        nics: [{ name: 'eth0', mac, ip: `10.${100 + c}.0.${n + 1}` }],
      });
    });
    chain = new FaultyChain({
      kubeConfig: cluster.kubeConfig,
      env: {
        BMH_NAMESPACE: cluster.namespace,
        SWEEP_NAMESPACES: cluster.namespace,
        IP_SOURCES: 'nics',
        SSH_USER: lab.username,
        SSH_PORT: String(lab.port),
        SSH_KNOWN_HOSTS: knownHostsPath,
        SSH_CONNECT_TIMEOUT_SECONDS: '30',
        SSH_TIMEOUT_SECONDS: '60',
        SSH_CONCURRENCY: '10',
      },
    });
    await chain.start();
  }, 300_000);

  afterAll(async () => {
    await chain?.stop();
    await lab?.stopAll();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('provisions 50 clusters of 10 nodes applied at once, each exactly once', async () => {
    const names = Array.from({ length: provisionings }, (_, i) => `load-${i}`);
    const { beforeMb, peakMb } = await measureRss(async () => {
      const created = await Promise.all(
        names.map((name, i) =>
          createProvisioning(
            cluster.kubeConfig,
            clusterProvisioning(cluster.namespace, 100 + i, name, 3, nodesPerCluster - 3),
          ),
        ),
      );
      await inParallel(created, 10, async (object) => void (await chain.publish(sourceEvent('add', object))));
      await inParallel(
        names,
        10,
        // The KUD Jobs run in the functions' namespace (contract section 12).
        async (name) => void (await chain.finishJob(chain.functionsNamespace, `kud-${name}`)),
      );
    });
    let complete = 0;
    const problems: string[] = [];
    for (const name of names) {
      const ready = isTrue(
        await conditionsOf(cluster.kubeConfig, 'provisionings', cluster.namespace, name),
        'Ready',
      );
      const objects = await derivedObjects(
        cluster.kubeConfig,
        cluster.namespace,
        name,
        chain.functionsNamespace,
      );
      // The tenant's inventory and IP ConfigMaps; the inventory the Job mounted, in the functions' namespace.
      const single =
        objects.jobs.length === 1 && objects.configMaps.length === 2 && objects.mounted?.length === 1;
      if (ready && single) complete++;
      else problems.push(`${name}: ready ${ready}, ${JSON.stringify(objects)}`);
    }
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    const ips = await core.readNamespacedConfigMap({
      name: 'load-7-configmap',
      namespace: cluster.namespace,
    });
    expect(Object.keys(ips.data ?? {})).toHaveLength(nodesPerCluster);
    tally.add('Load', { injected: provisionings, recovered: complete, lost: provisionings - complete });
    tally.note(
      `${provisionings} Provisionings × ${nodesPerCluster} nodes: ${complete} Ready with one Job, two ConfigMaps and one mounted inventory each; ` +
        `process RSS (host-lookup, inventory-render, kud-job-launch in-process) ${beforeMb} MB before, peak ${peakMb} MB`,
    );
    expect(problems).toEqual([]);
    expect(peakMb - beforeMb).toBeLessThan(1024);
  }, 600_000);

  it('installs 200 Softwares across 20 sshd hosts delivered at once, one session per Software and host', async () => {
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    // Ten two-node clusters on hosts 2c and 2c+1, as kud-job-launch writes their ConfigMaps.
    for (let c = 0; c < softwareClusters; c++) {
      // software-install installs only on a cluster whose Provisioning is Ready.
      await createReadyProvisioning(cluster.kubeConfig, cluster.namespace, `sw-${c}`);
      await core.createNamespacedConfigMap({
        namespace: cluster.namespace,
        body: {
          metadata: { name: `sw-${c}-configmap`, labels: { cluster: `sw-${c}` } },
          data: { MASTER_m: lab.hosts[2 * c]!.ip, WORKER_w: lab.hosts[2 * c + 1]!.ip },
        },
      });
    }
    const specs = Array.from({ length: softwareClusters * softwaresPerCluster }, (_, i) => ({
      name: `tools-${i}`,
      cluster: `sw-${i % softwareClusters}`,
      spec: { masterSoftware: [`pkg-${i}`], workerSoftware: [`pkg-${i}`] },
    }));
    const before = lab.hosts.map((h) => h.commands().length);
    const { beforeMb, peakMb } = await measureRss(async () => {
      const created = await Promise.all(
        specs.map((s) => createSoftware(cluster.kubeConfig, cluster.namespace, s.name, s.cluster, s.spec)),
      );
      await inParallel(created, 20, async (object) => void (await chain.publish(sourceEvent('add', object))));
    });
    let installed = 0;
    for (const s of specs)
      if (isTrue(await conditionsOf(cluster.kubeConfig, 'softwares', cluster.namespace, s.name), 'Installed'))
        installed++;
    // Each host got exactly one session per Software of its cluster, each with that Software's package once.
    const duplicates: string[] = [];
    lab.hosts.forEach((host, h) => {
      const commands = host.commands().slice(before[h]);
      const expected = specs
        .filter((s) => s.cluster === `sw-${Math.floor(h / 2)}`)
        .map((s) => s.spec.masterSoftware[0]!);
      const seen = commands.map((c) => /'(pkg-\d+)'$/.exec(c)?.[1]);
      if (
        seen.length !== expected.length ||
        new Set(seen).size !== seen.length ||
        !expected.every((p) => seen.includes(p))
      )
        duplicates.push(`${host.ip}: ${seen.length} sessions for ${expected.length} Softwares`);
    });
    tally.add('Load', { injected: specs.length, recovered: installed, lost: specs.length - installed });
    tally.note(
      `${specs.length} Softwares on ${lab.hosts.length} sshd hosts: ${installed} Installed, ${duplicates.length === 0 ? 'no session duplicated or missing' : duplicates.join('; ')}; ` +
        `process RSS (software-install in-process) ${beforeMb} MB before, peak ${peakMb} MB`,
    );
    expect(duplicates).toEqual([]);
    expect(installed).toBe(specs.length);
    expect(peakMb - beforeMb).toBeLessThan(1024);
  }, 600_000);
});
