/**
 * Event faults on the whole chain (four real function servers, real API server, real sshd):
 * - every chain event dropped once, in its own cluster: the sweep (the PingSource's ping) brings
 *   each cluster to Ready and its Software to Installed; the time to recover is printed;
 * - every event delivered twice, the duplicates late and newest first: one Job, one inventory
 *   ConfigMap, one IP ConfigMap, one SSH session per host.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { describeOnNode } from '../support/node.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CloudEvent } from 'cloudevents';
import { EventTypes } from '../../shared/events/types.js';
import { useTestCluster } from '../support/cluster.js';
import { type SshHosts } from '../support/sshd.js';
import { startNodeSshHosts } from '../support/node-lab-hosts.js';
import { sourceEvent } from '../integration/functions/support/chain-harness.js';
import { createProvisioning } from '../integration/functions/support/fixtures.js';
import { FaultTally } from './report/tally.js';
import { type Fault, FaultyChain, chainDone, derivedObjects, stepName } from './support/faulty-chain.js';
import {
  clusterProvisioning,
  createClusterHosts,
  createSoftware,
  labChainEnv,
  prepareNamespace,
} from './support/lab-cluster.js';

const cluster = useTestCluster();
const tally = new FaultTally(import.meta.url);

/** The chain's events, as stepName() names them. */
const droppable = [
  'add Provisioning',
  'hosts.resolved',
  'inventory.rendered',
  'update Job',
  'cluster.ready',
] as const;

describeOnNode('event faults', () => {
  let lab: SshHosts;
  let chain: FaultyChain;
  let dir: string;

  beforeAll(async () => {
    lab = await startNodeSshHosts({ count: 2 });
    dir = await mkdtemp(join(tmpdir(), 'bpa-event-faults-'));
    const { knownHostsPath } = await prepareNamespace(cluster.kubeConfig, cluster.namespace, lab, dir);
    for (let i = 0; i <= droppable.length; i++)
      await createClusterHosts(cluster.kubeConfig, cluster.namespace, lab, i, 2);
    chain = new FaultyChain({
      kubeConfig: cluster.kubeConfig,
      env: labChainEnv(cluster.namespace, lab, knownHostsPath),
    });
    await chain.start();
  }, 120_000);

  afterAll(async () => {
    await chain?.stop();
    await lab?.stopAll();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const done = (name: string) => chainDone(cluster.kubeConfig, cluster.namespace, name);

  /** A Software waiting for the cluster, then the Provisioning and the Job, through `fault`. */
  async function runChain(
    index: number,
    name: string,
    fault: (event: CloudEvent<unknown>, target: string) => Fault,
  ) {
    const software = await createSoftware(cluster.kubeConfig, cluster.namespace, `${name}-tools`, name);
    await chain.publish(sourceEvent('add', software), fault);
    const provisioning = await createProvisioning(
      cluster.kubeConfig,
      clusterProvisioning(cluster.namespace, index, name, 1, 1),
    );
    await chain.publish(sourceEvent('add', provisioning), fault);
    await chain.finishJob(chain.functionsNamespace, `kud-${name}`, fault);
  }

  it.each(droppable.map((step, index) => [step, index] as const))(
    'recovers a chain whose %s event was dropped, through the sweep',
    async (step, index) => {
      const name = `drop-${index}`;
      let dropped = 0;
      let droppedAt = 0;
      await runChain(index, name, (event) => {
        if (dropped === 0 && stepName(event) === step) {
          dropped++;
          droppedAt = performance.now();
          return 'drop';
        }
        return 'pass';
      });
      expect(dropped).toBe(1);
      expect(await done(name)).toBe(false);

      let rounds = 0;
      while (!(await done(name)) && rounds < 6) {
        rounds++;
        await chain.sweep();
        // The Job controller finishes a Job the sweep launched (its update passes).
        await chain.finishJob(chain.functionsNamespace, `kud-${name}`);
      }
      const recovered = await done(name);
      tally.record('Event faults', recovered);
      const objects = await derivedObjects(
        cluster.kubeConfig,
        cluster.namespace,
        name,
        chain.functionsNamespace,
      );
      tally.note(
        `dropped ${step}: ${recovered ? `recovered after ${rounds} sweep(s), ${Math.round(performance.now() - droppedAt)} ms after the drop` : 'NOT recovered'}`,
      );
      expect(recovered).toBe(true);
      expect(objects).toEqual({
        jobs: [`kud-${name}`],
        configMaps: [`${name}-configmap`, `${name}-inventory`],
        // What the KUD Job mounted, in the functions' namespace.
        mounted: [`${name}-inventory`],
      });
    },
    180_000,
  );

  it('makes one Job, one inventory, one IP ConfigMap and one session per host when every event comes twice, late and out of order', async () => {
    const index = droppable.length;
    const name = `twice-${index}`;
    let duplicated = 0;
    const before = lab.hosts.map((h) => h.commands().length);
    await runChain(index, name, () => {
      duplicated++;
      return 'duplicate-late';
    });
    // The late copies, newest first: cluster.ready before job update before inventory.rendered...
    const late = await chain.flushLate();
    expect(late.every((d) => d.status < 500)).toBe(true);
    expect(await done(name)).toBe(true);
    const objects = await derivedObjects(
      cluster.kubeConfig,
      cluster.namespace,
      name,
      chain.functionsNamespace,
    );
    expect(objects).toEqual({
      jobs: [`kud-${name}`],
      configMaps: [`${name}-configmap`, `${name}-inventory`],
      mounted: [`${name}-inventory`],
    });
    const sessions = lab.hosts.map((h, i) => h.commands().length - (before[i] ?? 0));
    // Two nodes on two hosts: one session each, whatever came twice.
    expect(sessions).toEqual([1, 1]);
    const readyAnnouncements = chain.harness
      .replies(EventTypes.clusterReady)
      .filter((e) => (e as unknown as { cluster: string }).cluster === name);
    expect(readyAnnouncements).toHaveLength(1);
    const installedAnnouncements = chain.harness
      .replies(EventTypes.softwareInstalled)
      .filter((e) => (e as unknown as { cluster: string }).cluster === name);
    expect(installedAnnouncements).toHaveLength(1);
    tally.add('Event faults', { injected: duplicated, recovered: duplicated, lost: 0 });
    tally.note(
      `duplicated ${duplicated} deliveries late and out of order: 1 Job, 2 ConfigMaps, 1 session per host, cluster.ready and software.installed once`,
    );
  }, 180_000);
});
