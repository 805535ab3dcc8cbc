/**
 * host-lookup's watched index of BareMetalHosts (issue 13 item 2) on the real API server with
 * Metal3's real CRD: after the first lookup has listed, later Provisionings are served without a
 * list, and a host added, re-inspected (new NIC IP) or deleted after the index was built is seen
 * by the next Provisioning. Every request host-lookup makes is recorded (RecordingKubeConfig).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { EventTypes } from '../../../shared/events/types.js';
import { definition as hostLookup } from '../../../functions/host-lookup/index.js';
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
    return {
      reply: delivery?.reply?.type,
      ip: status.status?.nodes?.[0]?.ip,
      reason: conditionOf(status, 'HostsResolved')?.reason,
    };
  };

  it('lists once, then serves lookups from the watch (a host read again, no list)', async () => {
    expect(await resolve('aa:bb:cc:00:13:01')).toMatchObject({
      reply: EventTypes.hostsResolved,
      ip: '10.13.0.1',
    });
    expect(hostLists()).toBe(1);
    const before = recorder.calls.length;
    expect(await resolve('aa:bb:cc:00:13:12')).toMatchObject({ ip: '10.13.1.2' });
    const hostCalls = recorder.calls.slice(before).filter((c) => c.resource === 'baremetalhosts');
    expect(hostCalls.map((c) => [c.verb, c.name])).toEqual([['get', 'host-2']]);
  });

  it('sees a host added after the index was built', async () => {
    await createBareMetalHost(cluster.kubeConfig, {
      name: 'host-3',
      namespace: cluster.namespace,
      bootMac: 'aa:bb:cc:00:13:03',
      nics: [{ name: 'eth0', mac: 'aa:bb:cc:00:13:03', ip: '10.13.0.3' }],
    });
    expect(await resolve('aa:bb:cc:00:13:03')).toMatchObject({
      reply: EventTypes.hostsResolved,
      ip: '10.13.0.3',
    });
  });

  it('sees a host re-inspected with a new NIC IP', async () => {
    await custom().patchNamespacedCustomObjectStatus(
      {
        ...bmh,
        namespace: cluster.namespace,
        name: 'host-2',
        body: {
          status: {
            hardware: { nics: [{ name: 'eth0', mac: 'aa:bb:cc:00:13:02', ip: '10.13.9.2' }] },
          },
        },
      },
      mergePatch,
    );
    expect(await resolve('aa:bb:cc:00:13:02')).toMatchObject({ ip: '10.13.9.2' });
    // eth1 is gone from the inspection, and its MAC (not the boot MAC) with it.
    expect(await resolve('aa:bb:cc:00:13:12')).toMatchObject({
      reply: EventTypes.provisioningFailed,
      reason: 'HostNotFound',
    });
  });

  it('sees a host deleted, and its MAC on the host that has it now', async () => {
    const namespace = cluster.namespace;
    await custom().deleteNamespacedCustomObject({ ...bmh, namespace, name: 'host-1' });
    expect(await resolve('aa:bb:cc:00:13:01')).toMatchObject({
      reply: EventTypes.provisioningFailed,
      reason: 'HostNotFound',
    });
    await custom().deleteNamespacedCustomObject({ ...bmh, namespace, name: 'host-3' });
    await createBareMetalHost(cluster.kubeConfig, {
      name: 'host-4',
      namespace,
      bootMac: 'aa:bb:cc:00:13:03',
      nics: [{ name: 'eth0', mac: 'aa:bb:cc:00:13:03', ip: '10.13.0.4' }],
    });
    expect(await resolve('aa:bb:cc:00:13:03')).toMatchObject({
      reply: EventTypes.hostsResolved,
      ip: '10.13.0.4',
    });
  });
});
