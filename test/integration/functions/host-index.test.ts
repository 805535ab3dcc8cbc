/**
 * host-lookup's watched index of BareMetalHosts (issue 13 item 2) on the real API server with
 * Metal3's real CRD: after the first lookup has listed, later Provisionings read no host at all
 * (their only host request is the claim: one PATCH of spec.consumerRef, with the index's
 * resourceVersion as precondition), and a host added, re-inspected (new NIC IP) or deleted after the index was built reaches the
 * index through the watch (the test waits for that: milliseconds) and is seen by the next
 * Provisioning, with no list. A MAC the index does not know makes it list again (at most once per
 * 5 s). Every request host-lookup makes is recorded (RecordingKubeConfig).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { EventTypes } from '../../../shared/events/types.js';
import { definition as hostLookup } from '../../../functions/host-lookup/index.js';
import { watchedHostIndex } from '../../../functions/host-lookup/host-watch.js';
import type { HostMacEntry } from '../../../shared/core/host-index.js';
import { silentLogger } from '../../../shared/log.js';
import { useTestCluster } from '../../support/cluster.js';
import { RecordingKubeConfig } from '../../support/recording-kube-config.js';
import { ChainHarness, sourceEvent } from './support/chain-harness.js';
import {
  conditionOf,
  createBareMetalHost,
  createProvisioning,
  provisioningObject,
  readProvisioning,
} from './support/fixtures.js';

const cluster = useTestCluster();
const bmh = { group: 'metal3.io', version: 'v1alpha1', plural: 'baremetalhosts' } as const;
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

describe('the watched BareMetalHost index', () => {
  let harness: ChainHarness;
  let recorder: RecordingKubeConfig;
  const custom = () => cluster.kubeConfig.makeApiClient(CustomObjectsApi);
  const hostLists = () =>
    recorder.calls.filter((c) => c.resource === 'baremetalhosts' && c.verb === 'list').length;

  beforeAll(async () => {
    const namespace = cluster.namespace;
    for (const [name, octet] of [
      ['host-1', 1],
      ['host-2', 2],
    ] as const)
      await createBareMetalHost(cluster.kubeConfig, {
        name,
        namespace,
        bootMac: `aa:bb:cc:00:13:0${octet}`,
        nics: [
          { name: 'eth0', mac: `aa:bb:cc:00:13:0${octet}`, ip: `10.13.0.${octet}` },
          { name: 'eth1', mac: `aa:bb:cc:00:13:1${octet}`, ip: `10.13.1.${octet}` },
        ],
      });
    recorder = new RecordingKubeConfig();
    recorder.loadFromFile(cluster.kubeconfigPath);
    harness = new ChainHarness(recorder, { BMH_NAMESPACE: namespace, IP_SOURCES: 'nics' });
    await harness.start([hostLookup]);
  });

  afterAll(async () => {
    await harness?.stop();
  });

  /** Until the watch has brought the index to what `expected` says about `mac`. */
  const untilIndexed = async (mac: string, expected: (entry: HostMacEntry | undefined) => boolean) => {
    const index = watchedHostIndex(recorder, cluster.namespace, silentLogger);
    const deadline = Date.now() + 10_000;
    while (!expected(index.entryFor(mac))) {
      if (Date.now() > deadline) throw new Error(`the watch did not bring ${mac} to the index within 10 s`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  /** `work`, and the BareMetalHost requests host-lookup made meanwhile. */
  const hostCallsDuring = async <T>(work: () => Promise<T>) => {
    const before = recorder.calls.length;
    const result = await work();
    return { result, hostCalls: recorder.calls.slice(before).filter((c) => c.resource === 'baremetalhosts') };
  };

  let count = 0;
  /** A one-node Provisioning for `mac`, through host-lookup: the reply type and the node's IP. */
  const resolve = async (mac: string) => {
    const name = `p${++count}`;
    const created = await createProvisioning(
      cluster.kubeConfig,
      provisioningObject({
        name,
        namespace: cluster.namespace,
        cluster: name,
        masters: [{ label: 'm1', mac }],
      }),
    );
    const [delivery] = await harness.publish(sourceEvent('add', created));
    const status = await readProvisioning(cluster.kubeConfig, cluster.namespace, name);
    // One owner per host: the claim is taken away again (as an admin would), so the next
    // Provisioning of this file may have the host; the watch brings that to the index.
    const held = (status.status as { claimedHosts?: { name: string }[] } | undefined)?.claimedHosts ?? [];
    for (const host of held)
      await custom().patchNamespacedCustomObject(
        { ...bmh, namespace: cluster.namespace, name: host.name, body: { spec: { consumerRef: null } } },
        mergePatch,
      );
    if (held.length > 0) await untilIndexed(mac, (entry) => entry?.consumer === undefined);
    return {
      reply: delivery?.reply?.type,
      ip: status.status?.nodes?.[0]?.ip,
      reason: conditionOf(status, 'HostsResolved')?.reason,
    };
  };
  const resolvedFrom = (ip: string) => ({ reply: EventTypes.hostsResolved, ip });
  /** The one host request of a lookup served by the index: the claim. */
  const claimOf = (name: string) => ({
    group: 'metal3.io',
    resource: 'baremetalhosts',
    namespace: cluster.namespace,
    name,
    verb: 'patch',
  });
  const notFound = { reply: EventTypes.provisioningFailed, reason: 'HostNotFound' };

  it('lists once, then serves lookups from the watch (no host read)', async () => {
    expect(await resolve('aa:bb:cc:00:13:01')).toMatchObject(resolvedFrom('10.13.0.1'));
    expect(hostLists()).toBe(1);
    const { result, hostCalls } = await hostCallsDuring(() => resolve('aa:bb:cc:00:13:12'));
    expect(result).toMatchObject(resolvedFrom('10.13.1.2'));
    expect(hostCalls).toEqual([claimOf('host-2')]);
  });

  it('sees a host added after the index was built', async () => {
    await createBareMetalHost(cluster.kubeConfig, {
      name: 'host-3',
      namespace: cluster.namespace,
      bootMac: 'aa:bb:cc:00:13:03',
      nics: [{ name: 'eth0', mac: 'aa:bb:cc:00:13:03', ip: '10.13.0.3' }],
    });
    await untilIndexed('aa:bb:cc:00:13:03', (entry) => entry?.host === `${cluster.namespace}/host-3`);
    const { result, hostCalls } = await hostCallsDuring(() => resolve('aa:bb:cc:00:13:03'));
    expect(result).toMatchObject(resolvedFrom('10.13.0.3'));
    expect(hostCalls).toEqual([claimOf('host-3')]);
  });

  it('sees a host re-inspected with a new NIC IP, and a NIC gone', async () => {
    await custom().patchNamespacedCustomObjectStatus(
      {
        ...bmh,
        namespace: cluster.namespace,
        name: 'host-2',
        body: {
          status: { hardware: { nics: [{ name: 'eth0', mac: 'aa:bb:cc:00:13:02', ip: '10.13.9.2' }] } },
        },
      },
      mergePatch,
    );
    await untilIndexed('aa:bb:cc:00:13:02', (entry) => entry?.nicIp === '10.13.9.2');
    const { result, hostCalls } = await hostCallsDuring(() => resolve('aa:bb:cc:00:13:02'));
    expect(result).toMatchObject(resolvedFrom('10.13.9.2'));
    expect(hostCalls).toEqual([claimOf('host-2')]);
    // eth1 is gone from the inspection, and its MAC (not the boot MAC) with it.
    await untilIndexed('aa:bb:cc:00:13:12', (entry) => entry === undefined);
    expect(await resolve('aa:bb:cc:00:13:12')).toMatchObject(notFound);
  });

  it('sees a host deleted, and its MAC on the host that has it now', async () => {
    const namespace = cluster.namespace;
    await custom().deleteNamespacedCustomObject({ ...bmh, namespace, name: 'host-1' });
    await untilIndexed('aa:bb:cc:00:13:01', (entry) => entry === undefined);
    expect(await resolve('aa:bb:cc:00:13:01')).toMatchObject(notFound);
    await custom().deleteNamespacedCustomObject({ ...bmh, namespace, name: 'host-3' });
    await createBareMetalHost(cluster.kubeConfig, {
      name: 'host-4',
      namespace,
      bootMac: 'aa:bb:cc:00:13:03',
      nics: [{ name: 'eth0', mac: 'aa:bb:cc:00:13:03', ip: '10.13.0.4' }],
    });
    await untilIndexed('aa:bb:cc:00:13:03', (entry) => entry?.host === `${namespace}/host-4`);
    expect(await resolve('aa:bb:cc:00:13:03')).toMatchObject(resolvedFrom('10.13.0.4'));
  });

  it('lists again for a MAC it does not know, at most once per 5 s', async () => {
    await new Promise((resolve) => setTimeout(resolve, 5_100));
    const lists = hostLists();
    expect(await resolve('aa:bb:cc:00:13:99')).toMatchObject(notFound);
    expect(hostLists()).toBe(lists + 1);
    // Within 5 s of that list, another unknown MAC is answered from the index alone.
    const { result, hostCalls } = await hostCallsDuring(() => resolve('aa:bb:cc:00:13:98'));
    expect(result).toMatchObject(notFound);
    expect(hostCalls).toEqual([]);
  });
});
