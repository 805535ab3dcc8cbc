/**
 * One owner per host (contract section 12, ADR 0013 point 3) on the real API server with Metal3's
 * real BareMetalHost CRD (METAL3_CRDS_DIR): host-lookup claims each resolved host by its
 * spec.consumerRef (a Virtlet VM pod by the bpa.akraino.org/consumer annotation); a second
 * Provisioning, in another namespace, naming a claimed MAC touches nothing and gets HostInUse
 * with the contract's message and a Warning Event; a host held by a Metal3Machine is in use too;
 * two racing for one host cannot both win; a host is released when its node leaves the spec
 * (with the spec.image bpa-functions wrote) and when the Provisioning is deleted (kud-job-launch's
 * finalizer), and the sweep then lets the waiting Provisioning proceed.
 *
 * host-lookup and kud-job-launch run behind their real HTTP servers. IMITATION: the VM pods are
 * written by the test, status included (test/support/vm-namespace.ts: no Virtlet here), and the
 * Image's status is written as image-verify writes it.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { hostImageAnnotation } from '../../../shared/core/host-image.js';
import { EventTypes } from '../../../shared/events/types.js';
import { definition as hostLookup } from '../../../functions/host-lookup/index.js';
import { definition as kudJobLaunch } from '../../../functions/kud-job-launch/index.js';
import { createNamespace, deleteNamespace, uniqueNamespaceName } from '../../../local/control-plane/index.js';
import { useTestCluster } from '../../support/cluster.js';
import { createVmPod } from '../../support/vm-namespace.js';
import { ChainHarness, pingEvent, sourceEvent } from './support/chain-harness.js';
import {
  bpaGroup,
  conditionOf,
  createBareMetalHost,
  createProvisioning,
  provisioningObject,
  readProvisioning,
} from './support/fixtures.js';

const cluster = useTestCluster();
const bmh = { group: 'metal3.io', version: 'v1alpha1', plural: 'baremetalhosts' } as const;
const mac = (i: number) => `ee:23:00:00:00:${String(i).padStart(2, '0')}`;
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const sha256 = 'c1a1'.padEnd(64, '0');

interface StoredHost {
  metadata: { annotations?: Record<string, string>; resourceVersion: string };
  spec: { consumerRef?: Record<string, string>; image?: Record<string, string> };
}

describe('one owner per host', () => {
  let harness: ChainHarness;
  let other = '';
  let hosts = '';
  let vms = '';
  const custom = () => cluster.kubeConfig.makeApiClient(CustomObjectsApi);
  const core = () => cluster.kubeConfig.makeApiClient(CoreV1Api);
  const readHost = async (name: string) =>
    (await custom().getNamespacedCustomObject({ ...bmh, namespace: hosts, name })) as StoredHost;
  const readPod = (name: string) => core().readNamespacedPod({ namespace: vms, name });
  const read = (namespace: string, name: string) => readProvisioning(cluster.kubeConfig, namespace, name);
  const refOf = (p: { metadata: { namespace?: string; name: string; uid?: string } }) => ({
    apiVersion: 'bpa.akraino.org/v1alpha1',
    kind: 'Provisioning',
    namespace: p.metadata.namespace,
    name: p.metadata.name,
    uid: p.metadata.uid,
  });
  const provision = async (
    namespace: string,
    name: string,
    macs: number[],
    extra: { clusterType?: string; image?: string } = {},
  ) => {
    const object = provisioningObject({
      name,
      namespace,
      cluster: `${name}-${namespace}`.slice(0, 40),
      ...(extra.clusterType ? { clusterType: extra.clusterType } : {}),
      masters: macs.map((i, n) => ({ label: `node-${n + 1}`, mac: mac(i) })),
    });
    const created = await createProvisioning(cluster.kubeConfig, {
      ...object,
      spec: {
        ...object.spec,
        ...(extra.image ? { image: { name: extra.image } } : {}),
      } as typeof object.spec,
    });
    return { created, deliveries: await harness.publish(sourceEvent('add', created)) };
  };
  const ping = async (target: string) => {
    expect((await harness.deliver(target, pingEvent())).status).toBe(204);
    return harness.collector.drain();
  };
  const deleteProvisioning = (namespace: string, name: string) =>
    custom().deleteNamespacedCustomObject({ ...bpaGroup, plural: 'provisionings', namespace, name });
  const warnings = async (namespace: string, name: string) =>
    (await core().listNamespacedEvent({ namespace })).items.filter(
      (e) => e.involvedObject.name === name && e.reason === 'HostInUse' && e.type === 'Warning',
    );

  beforeAll(async () => {
    other = await createNamespace(cluster.kubeConfig, uniqueNamespaceName('tenant-b'));
    hosts = await createNamespace(cluster.kubeConfig, uniqueNamespaceName('hosts'));
    vms = await createNamespace(cluster.kubeConfig, uniqueNamespaceName('vms'));
    for (let i = 1; i <= 6; i++)
      await createBareMetalHost(cluster.kubeConfig, {
        name: `h-${i}`,
        namespace: hosts,
        bootMac: mac(i),
        nics: [{ name: 'eth0', mac: mac(i), ip: `10.23.0.${i}` }],
      });
    // A host Cluster API's CAPM3 uses: its consumerRef names a Metal3Machine.
    await createBareMetalHost(cluster.kubeConfig, {
      name: 'capi',
      namespace: hosts,
      bootMac: mac(9),
      nics: [{ name: 'eth0', mac: mac(9), ip: '10.23.0.9' }],
    });
    await custom().patchNamespacedCustomObject(
      {
        ...bmh,
        namespace: hosts,
        name: 'capi',
        body: {
          spec: {
            consumerRef: {
              apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta1',
              kind: 'Metal3Machine',
              namespace: hosts,
              name: 'worker-0',
            },
          },
        },
      },
      mergePatch,
    );
    for (const [name, i] of [
      ['vm-1', 21],
      ['vm-2', 22],
    ] as const)
      await createVmPod(cluster.kubeConfig, {
        namespace: vms,
        name,
        networks: [{ name: 'default', mac: mac(i), ips: [`10.244.23.${i}`], default: true }],
      });
    // An Image as image-verify leaves it (Ready), in the first tenant's namespace.
    const created = (await custom().createNamespacedCustomObject({
      ...bpaGroup,
      plural: 'images',
      namespace: cluster.namespace,
      body: {
        apiVersion: 'bpa.akraino.org/v1alpha1',
        kind: 'Image',
        metadata: { name: 'a.os.node', namespace: cluster.namespace },
        spec: {
          type: 'os',
          owner: cluster.namespace,
          clusterName: 'a',
          imageName: 'a.os.node',
          length: 4096,
          format: 'raw',
        },
      },
    })) as Record<string, unknown>;
    await custom().replaceNamespacedCustomObjectStatus({
      ...bpaGroup,
      plural: 'images',
      namespace: cluster.namespace,
      name: 'a.os.node',
      body: { ...created, status: { phase: 'Ready', sha256, url: 'http://image-download.test/a.os.node' } },
    });
    harness = new ChainHarness(cluster.kubeConfig, {
      BMH_NAMESPACE: hosts,
      VM_NAMESPACES: vms,
      IP_SOURCES: 'nics',
      SWEEP_NAMESPACES: `${cluster.namespace},${other}`,
    });
    await harness.start([hostLookup, kudJobLaunch]);
  });

  afterAll(async () => {
    await harness?.stop();
    for (const namespace of [other, hosts, vms])
      if (namespace) await deleteNamespace(cluster.kubeConfig, namespace);
  });

  it('claims the hosts of the first; the second, in another namespace, touches nothing and gets HostInUse', async () => {
    const first = await provision(cluster.namespace, 'first', [1, 2], { image: 'a.os.node' });
    expect(first.deliveries.map((d) => d.reply?.type)).toEqual([EventTypes.hostsResolved]);
    const owner = await read(cluster.namespace, 'first');
    for (const name of ['h-1', 'h-2']) {
      const host = await readHost(name);
      expect(host.spec.consumerRef).toEqual(refOf(owner));
      expect(host.spec.image?.checksum).toBe(sha256);
    }
    expect((owner.status as Record<string, unknown>).claimedHosts).toEqual([
      { kind: 'BareMetalHost', namespace: hosts, name: 'h-1' },
      { kind: 'BareMetalHost', namespace: hosts, name: 'h-2' },
    ]);

    const before = await Promise.all(['h-2', 'h-3'].map(readHost));
    const second = await provision(other, 'second', [3, 2]);
    expect(second.deliveries.map((d) => [d.status, d.reply?.type])).toEqual([
      [200, EventTypes.provisioningFailed],
    ]);
    const status = await read(other, 'second');
    expect(conditionOf(status, 'HostsResolved')).toMatchObject({
      status: 'False',
      reason: 'HostInUse',
      message: `Host ${hosts}/h-2 (MAC ${mac(2)}) is already used by ${cluster.namespace}/first`,
    });
    expect(conditionOf(status, 'Ready')).toMatchObject({ status: 'False', reason: 'HostInUse' });
    // Neither the claimed host nor its free one was written.
    const after = await Promise.all(['h-2', 'h-3'].map(readHost));
    expect(after.map((h) => h.metadata.resourceVersion)).toEqual(
      before.map((h) => h.metadata.resourceVersion),
    );
    expect(after[1]?.spec.consumerRef).toBeUndefined();
    expect(await warnings(other, 'second')).toHaveLength(1);
  });

  it('counts a host whose consumerRef names a Metal3Machine as in use', async () => {
    const before = await readHost('capi');
    await provision(other, 'capi-taker', [9]);
    expect(conditionOf(await read(other, 'capi-taker'), 'HostsResolved')).toMatchObject({
      reason: 'HostInUse',
      message: `Host ${hosts}/capi (MAC ${mac(9)}) is already used by ${hosts}/worker-0`,
    });
    expect((await readHost('capi')).metadata.resourceVersion).toBe(before.metadata.resourceVersion);
  });

  it('lets exactly one of two Provisionings racing for a host have it', async () => {
    const objects = [
      [cluster.namespace, 'race-a'],
      [other, 'race-b'],
    ].map(([namespace, name]) =>
      provisioningObject({
        name: name!,
        namespace: namespace!,
        cluster: name!,
        masters: [{ label: 'm', mac: mac(5) }],
      }),
    );
    const created = await Promise.all(objects.map((o) => createProvisioning(cluster.kubeConfig, o)));
    await Promise.all(created.map((c) => harness.publish(sourceEvent('add', c))));
    const states = await Promise.all(created.map((c) => read(c.metadata.namespace!, c.metadata.name)));
    const reasons = states.map((s) => conditionOf(s, 'HostsResolved')?.reason).sort();
    expect(reasons).toEqual(['HostInUse', 'HostsResolved']);
    const winner = states.find((s) => conditionOf(s, 'HostsResolved')?.reason === 'HostsResolved')!;
    expect((await readHost('h-5')).spec.consumerRef).toEqual(refOf(winner));
  });

  it('releases a host (and the image bpa-functions wrote) when its node leaves the spec; the waiting one then proceeds', async () => {
    const live = await read(cluster.namespace, 'first');
    const changed = (await custom().patchNamespacedCustomObject(
      {
        ...bpaGroup,
        plural: 'provisionings',
        namespace: cluster.namespace,
        name: 'first',
        body: { spec: { masters: [{ 'node-1': { 'mac-address': mac(1) } }] } },
      },
      mergePatch,
    )) as typeof live;
    expect(changed.metadata.generation).toBeGreaterThan(live.metadata.generation ?? 0);
    const deliveries = await harness.publish(sourceEvent('update', changed));
    expect(deliveries.map((d) => d.reply?.type)).toEqual([EventTypes.hostsResolved]);
    const released = await readHost('h-2');
    expect(released.spec.consumerRef).toBeUndefined();
    expect(released.spec.image).toBeUndefined();
    expect(released.metadata.annotations?.[hostImageAnnotation]).toBeUndefined();
    expect((await readHost('h-1')).spec.consumerRef).toEqual(refOf(changed));

    const sent = await ping('host-lookup'); // the sweep retries HostInUse
    expect(sent.some((e) => e.type === EventTypes.hostsResolved)).toBe(true);
    const second = await read(other, 'second');
    expect(conditionOf(second, 'HostsResolved')).toMatchObject({ status: 'True' });
    for (const name of ['h-2', 'h-3']) expect((await readHost(name)).spec.consumerRef).toEqual(refOf(second));
  });

  it('releases the hosts of a deleted Provisioning after cleanup, with their image; the waiting one then proceeds', async () => {
    const third = await provision(other, 'third', [1]);
    expect(third.deliveries.map((d) => d.reply?.type)).toEqual([EventTypes.provisioningFailed]);
    expect(conditionOf(await read(other, 'third'), 'HostsResolved')?.reason).toBe('HostInUse');
    expect((await readHost('h-1')).spec.image?.checksum).toBe(sha256);

    await deleteProvisioning(cluster.namespace, 'first');
    await ping('kud-job-launch'); // no KUD Job was launched: nothing to clean, hosts released, finalizer gone
    await expect(read(cluster.namespace, 'first')).rejects.toMatchObject({ code: 404 });
    const released = await readHost('h-1');
    expect(released.spec.consumerRef).toBeUndefined();
    expect(released.spec.image).toBeUndefined();
    expect(released.metadata.annotations?.[hostImageAnnotation]).toBeUndefined();

    await ping('host-lookup');
    const proceeded = await read(other, 'third');
    expect(conditionOf(proceeded, 'HostsResolved')).toMatchObject({ status: 'True' });
    expect((await readHost('h-1')).spec.consumerRef).toEqual(refOf(proceeded));
  });

  it('claims VM pods by annotation: in use for a second, released on spec change and on deletion', async () => {
    const a = await provision(cluster.namespace, 'vms-a', [21], { clusterType: 'virtlet-vm' });
    expect(a.deliveries.map((d) => d.reply?.type)).toEqual([EventTypes.hostsResolved]);
    const owner = await read(cluster.namespace, 'vms-a');
    const consumer = (pod: Awaited<ReturnType<typeof readPod>>) =>
      pod.metadata?.annotations?.['bpa.akraino.org/consumer'];
    expect(consumer(await readPod('vm-1'))).toBe(`${cluster.namespace}/vms-a/${owner.metadata.uid}`);

    const before = (await readPod('vm-1')).metadata?.resourceVersion;
    await provision(other, 'vms-b', [21], { clusterType: 'virtlet-vm' });
    expect(conditionOf(await read(other, 'vms-b'), 'HostsResolved')).toMatchObject({
      reason: 'HostInUse',
      message: `VM ${vms}/vm-1 (MAC ${mac(21)}) is already used by ${cluster.namespace}/vms-a`,
    });
    expect((await readPod('vm-1')).metadata?.resourceVersion).toBe(before);
    expect(await warnings(other, 'vms-b')).toHaveLength(1);

    await deleteProvisioning(cluster.namespace, 'vms-a');
    await ping('kud-job-launch');
    expect(consumer(await readPod('vm-1'))).toBeUndefined();
    await ping('host-lookup');
    const b = await read(other, 'vms-b');
    expect(conditionOf(b, 'HostsResolved')).toMatchObject({ status: 'True' });
    expect(consumer(await readPod('vm-1'))).toBe(`${other}/vms-b/${b.metadata.uid}`);

    // Its node moves to the other VM: vm-1 is released, vm-2 claimed.
    const changed = (await custom().patchNamespacedCustomObject(
      {
        ...bpaGroup,
        plural: 'provisionings',
        namespace: other,
        name: 'vms-b',
        body: { spec: { masters: [{ 'node-1': { 'mac-address': mac(22) } }] } },
      },
      mergePatch,
    )) as typeof b;
    await harness.publish(sourceEvent('update', changed));
    expect(consumer(await readPod('vm-1'))).toBeUndefined();
    expect(consumer(await readPod('vm-2'))).toBe(`${other}/vms-b/${b.metadata.uid}`);
  });
});
