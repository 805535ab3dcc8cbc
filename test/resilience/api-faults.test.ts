/**
 * API faults: the functions reach the real kube-apiserver through a proxy that can cut it off
 * (open connections reset, new ones refused), answer 409 to status writes, or end watch streams.
 * - The API server gone before each step of a chain and back a moment later: the chain
 *   completes (the broker retries the 5xx answers), nothing is created twice.
 * - 409 Conflict on status writes: retried with a fresh read, no condition lost.
 * - Watch streams of the local ApiServerSource ended: it watches again and later changes arrive.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { describeOnNode } from '../support/node.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import type { CloudEvent } from 'cloudevents';
import { silentLogger } from '../../shared/log.js';
import { startApiServerSources } from '../../local/sources/index.js';
import { useTestCluster } from '../support/cluster.js';
import { type SshHosts } from '../support/sshd.js';
import { startNodeSshHosts } from '../support/node-lab-hosts.js';
import { startApiProxy, type ApiProxy } from '../support/faults/api-proxy.js';
import { sourceEvent } from '../integration/functions/support/chain-harness.js';
import { createProvisioning } from '../integration/functions/support/fixtures.js';
import { startSubscriber, waitFor } from '../unit/broker/support/recording-subscriber.js';
import { FaultTally } from './report/tally.js';
import {
  type Fault,
  FaultyChain,
  chainDone,
  conditionsOf,
  derivedObjects,
  isTrue,
  stepName,
} from './support/faulty-chain.js';
import {
  clusterProvisioning,
  createClusterHosts,
  createSoftware,
  labChainEnv,
  prepareNamespace,
} from './support/lab-cluster.js';

const cluster = useTestCluster();
const tally = new FaultTally(import.meta.url);
const steps = ['add Provisioning', 'hosts.resolved', 'inventory.rendered', 'update Job', 'cluster.ready'];

describeOnNode('API faults', () => {
  let lab: SshHosts;
  let proxy: ApiProxy;
  let chain: FaultyChain;
  let dir: string;

  beforeAll(async () => {
    lab = await startNodeSshHosts({ count: 2 });
    dir = await mkdtemp(join(tmpdir(), 'bpa-api-faults-'));
    proxy = await startApiProxy(cluster.kubeConfig);
    const { knownHostsPath } = await prepareNamespace(cluster.kubeConfig, cluster.namespace, lab, dir);
    for (let i = 0; i < 3; i++) await createClusterHosts(cluster.kubeConfig, cluster.namespace, lab, i, 2);
    chain = new FaultyChain({
      kubeConfig: cluster.kubeConfig,
      functionKubeConfig: proxy.kubeConfig,
      retries: 20,
      retryDelayMs: 250,
      env: labChainEnv(cluster.namespace, lab, knownHostsPath),
    });
    await chain.start();
  }, 120_000);

  afterAll(async () => {
    await chain?.stop();
    await proxy?.close();
    await lab?.stopAll();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const done = (name: string) => chainDone(cluster.kubeConfig, cluster.namespace, name);

  async function runChain(
    index: number,
    name: string,
    fault: (event: CloudEvent<unknown>, target: string) => Fault,
  ) {
    const software = await createSoftware(cluster.kubeConfig, cluster.namespace, `${name}-tools`, name);
    await chain.publish(sourceEvent('add', software));
    const provisioning = await createProvisioning(
      cluster.kubeConfig,
      clusterProvisioning(cluster.namespace, index, name, 1, 1),
    );
    await chain.publish(sourceEvent('add', provisioning), fault);
    // The KUD Job runs in the functions' namespace (contract section 12).
    await chain.finishJob(chain.functionsNamespace, `kud-${name}`, fault);
  }

  it('completes a chain when the API server goes away before each step and comes back', async () => {
    const name = 'outage';
    const before = lab.hosts.map((h) => h.commands().length);
    const cuts: string[] = [];
    const errorsBefore = chain.serverErrors;
    await runChain(0, name, (event) => {
      const step = stepName(event);
      if (steps.includes(step) && !cuts.includes(step)) {
        cuts.push(step);
        // Gone now, back in 1.5 s: the delivery fails (5xx or reset) and is retried meanwhile.
        void proxy.cut().then(() => setTimeout(() => void proxy.restore(), 1500));
      }
      return 'pass';
    });
    await proxy.restore();
    const recovered = await done(name);
    const objects = await derivedObjects(
      cluster.kubeConfig,
      cluster.namespace,
      name,
      chain.functionsNamespace,
    );
    const sessions = lab.hosts.map((h, i) => h.commands().length - (before[i] ?? 0));
    const clean =
      recovered &&
      objects.jobs.length === 1 &&
      objects.configMaps.length === 2 &&
      objects.mounted?.length === 1 &&
      sessions.every((n) => n === 1);
    tally.add('API faults', {
      injected: cuts.length,
      recovered: clean ? cuts.length : 0,
      lost: clean ? 0 : cuts.length,
    });
    tally.note(
      `API server cut before ${cuts.join(', ')}: ${chain.serverErrors - errorsBefore} failed deliveries retried; chain ${recovered ? 'completed' : 'NOT completed'}; ${objects.jobs.length} Job, ${objects.configMaps.length} ConfigMaps, sessions per host ${sessions.join('/')}`,
    );
    expect(cuts).toEqual(steps);
    expect(recovered).toBe(true);
    expect(objects).toEqual({
      jobs: [`kud-${name}`],
      configMaps: [`${name}-configmap`, `${name}-inventory`],
      // What the KUD Job mounted, in the functions' namespace.
      mounted: [`${name}-inventory`],
    });
    expect(sessions).toEqual([1, 1]);
  }, 240_000);

  it('retries status writes answered 409 with a fresh read and loses no condition', async () => {
    const name = 'conflicts';
    const statusWrite = (r: { method: string; url: string }) =>
      (r.method === 'PUT' || r.method === 'PATCH') &&
      r.url.includes(`/namespaces/${cluster.namespace}/`) &&
      /\/(provisionings|softwares)\/conflicts[^/]*\/status/.test(r.url);
    // The first status write of the chain fails twice in a row, every later one once.
    const failures = [proxy.failNext(statusWrite, 409, 2)];
    const from = proxy.requests.length;
    await runChain(1, name, () => {
      const last = failures[failures.length - 1]!;
      if (last.failed >= last.times) failures.push(proxy.failNext(statusWrite, 409, 1));
      return 'pass';
    });
    proxy.clearFailures();
    const conflicts = failures.reduce((sum, f) => sum + f.failed, 0);
    // After each 409 the writer reads the object again before it writes it again.
    const requests = proxy.requests.slice(from);
    const objectPath = (url: string) => url.split('?')[0]!.replace(/\/status$/, '');
    const writesWithoutFreshRead = requests.filter((r, i) => {
      if (r.injectedStatus !== 409) return false;
      const next = requests.slice(i + 1).find((n) => objectPath(n.url) === objectPath(r.url));
      return next !== undefined && next.method !== 'GET';
    });
    const provisioning = await conditionsOf(cluster.kubeConfig, 'provisionings', cluster.namespace, name);
    const software = await conditionsOf(cluster.kubeConfig, 'softwares', cluster.namespace, `${name}-tools`);
    const expectedTrue = ['HostsResolved', 'InventoryRendered', 'JobLaunched', 'KudInstalled', 'Ready'];
    const lost = expectedTrue
      .filter((type) => !isTrue(provisioning, type))
      .concat(isTrue(software, 'Installed') ? [] : ['Installed']);
    tally.add('API faults', {
      injected: conflicts,
      recovered: lost.length === 0 ? conflicts : 0,
      lost: lost.length === 0 ? 0 : conflicts,
    });
    tally.note(
      `409 on status writes: ${conflicts} conflicts injected, each retried after a fresh read; conditions lost: ${lost.length === 0 ? 'none' : lost.join(', ')}`,
    );
    expect(writesWithoutFreshRead).toEqual([]);
    expect(lost).toEqual([]);
    expect(conflicts).toBeGreaterThanOrEqual(6);
  }, 240_000);

  it('watches again after the local ApiServerSource loses its watch streams', async () => {
    const sink = await startSubscriber(() => ({ status: 202 }));
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    const running = await startApiServerSources({
      objects: [
        {
          apiVersion: 'sources.knative.dev/v1',
          kind: 'ApiServerSource',
          metadata: { name: 'watched', namespace: cluster.namespace },
          spec: {
            mode: 'Resource',
            sink: { uri: sink.url },
            resources: [
              { apiVersion: 'v1', kind: 'ConfigMap', selector: { matchLabels: { app: 'watched' } } },
            ],
          },
        },
      ],
      kubeConfig: proxy.kubeConfig,
      resolveRef: () => {
        throw new Error('no refs');
      },
      log: silentLogger,
    });
    const names = (type: string) =>
      sink.received
        .filter((r) => r.event.type === `dev.knative.apiserver.resource.${type}`)
        .map((r) => r.event['name']);
    try {
      await waitFor(
        () => proxy.requests.some((r) => r.url.includes('watch=true') && r.url.includes('configmaps')),
        20_000,
        'the first watch',
      );
      let recovered = 0;
      // The source backs off before watching again (tens of seconds), so two drops keep this bounded.
      const drops = 2;
      const rewatchMs: number[] = [];
      for (let i = 0; i < drops; i++) {
        // Let the watch be re-established, then end it and change something.
        await waitFor(() => proxy.dropWatches() > 0, 60_000, `an open watch to drop (${i})`);
        const droppedAt = performance.now();
        await core.createNamespacedConfigMap({
          namespace: cluster.namespace,
          body: { metadata: { name: `after-drop-${i}`, labels: { app: 'watched' } }, data: { i: String(i) } },
        });
        await waitFor(
          () => names('add').includes(`after-drop-${i}`),
          90_000,
          `the add of after-drop-${i}`,
        ).then(
          () => {
            recovered++;
            rewatchMs.push(Math.round(performance.now() - droppedAt));
          },
          () => undefined,
        );
      }
      tally.add('API faults', { injected: drops, recovered, lost: drops - recovered });
      tally.note(
        `watch streams ended ${drops} times: ${recovered} changes made after a drop were still announced (after ${rewatchMs.join(', ')} ms)`,
      );
      expect(recovered).toBe(drops);
      // Each object announced once as added, whatever the re-watches did.
      const adds = names('add');
      expect(new Set(adds).size).toBe(adds.length);
    } finally {
      await running.stop();
      await sink.close();
    }
  }, 240_000);
});
