/**
 * Contract section 13 on hand-written BareMetalHost status: an IMITATION of Metal3. The test
 * writes status.provisioning.state, errorType, errorMessage and the inspected NICs as Metal3's
 * baremetal-operator would (through the status subresource of Metal3's real BareMetalHost CRD,
 * METAL3_CRDS_DIR), to cover what the real operator's fixture provisioner cannot show: several
 * hosts in different states at once, an address that changes once the installed OS boots, and an
 * error that clears. Against the real baremetal-operator: metal3-provisioning.test.ts.
 *
 * host-lookup runs behind its real HTTP server on the real API server; sweeps are driven one
 * ping at a time.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CoreV1Api } from '@kubernetes/client-node';
import { EventTypes } from '../../../shared/events/types.js';
import { useTestCluster } from '../../support/cluster.js';
import { type ChainHarness, sourceEvent } from './support/chain-harness.js';
import { startHostLookup, sweepFor, waitForSweep } from './support/sweep.js';
import {
  conditionOf,
  createBareMetalHost,
  createProvisioning,
  patchBareMetalHostStatus,
  provisioningObject,
  readProvisioning,
} from './support/fixtures.js';

const cluster = useTestCluster();
const mac = (n: number) => `52:54:00:30:00:0${n}`;

describe('host-lookup waits for Metal3 (imitated status)', () => {
  let harness: ChainHarness;

  /** One sweep; the events it sent about Provisioning `name` (the others' are re-sends). */
  const ping = (name: string) => sweepFor(() => harness, name);
  const provision = async (name: string, macs: string[]) => {
    const created = await createProvisioning(
      cluster.kubeConfig,
      provisioningObject({
        name,
        namespace: cluster.namespace,
        cluster: name,
        masters: macs.map((m, i) => ({ label: `node-${i + 1}`, mac: m })),
      }),
    );
    return { created, deliveries: await harness.publish(sourceEvent('add', created)) };
  };
  const read = (name: string) => readProvisioning(cluster.kubeConfig, cluster.namespace, name);
  const nic = (n: number, ip: string) => [{ name: 'eth0', mac: mac(n), ip }];

  beforeAll(async () => {
    const namespace = cluster.namespace;
    await createBareMetalHost(cluster.kubeConfig, {
      name: 'ready',
      namespace,
      bootMac: mac(1),
      nics: nic(1, '10.30.0.1'),
    });
    await createBareMetalHost(cluster.kubeConfig, {
      name: 'writing',
      namespace,
      bootMac: mac(2),
      // The address the ramdisk had during inspection.
      nics: nic(2, '10.30.0.2'),
      state: 'provisioning',
    });
    await createBareMetalHost(cluster.kubeConfig, {
      name: 'fresh',
      namespace,
      bootMac: mac(3),
      nics: nic(3, '10.30.0.3'),
      state: 'inspecting',
    });
    await createBareMetalHost(cluster.kubeConfig, {
      name: 'broken',
      namespace,
      bootMac: mac(4),
      nics: nic(4, '10.30.0.4'),
      state: 'provisioning',
      error: { type: 'provisioning error', message: 'Image download failed: 404 Not Found' },
    });
    await createBareMetalHost(cluster.kubeConfig, {
      name: 'adopted',
      namespace,
      bootMac: mac(5),
      nics: nic(5, '10.30.0.5'),
      state: 'externally provisioned',
    });
    harness = await startHostLookup(cluster.kubeConfig, namespace);
  });

  afterAll(async () => {
    await harness?.stop();
  });

  it('waits, naming each host not provisioned and its state, and sends nothing meanwhile', async () => {
    const namespace = cluster.namespace;
    const { created, deliveries } = await provision('wait', [mac(1), mac(2), mac(3)]);
    expect(deliveries.map((d) => [d.status, d.reply?.type])).toEqual([[204, undefined]]);
    const waiting = await read('wait');
    const message = `Waiting for Metal3 to provision 2 hosts: ${namespace}/writing (provisioning), ${namespace}/fresh (inspecting); KUD starts once every host is provisioned`;
    expect(conditionOf(waiting, 'HostsResolved')).toMatchObject({
      status: 'Unknown',
      reason: 'WaitingForProvisioning',
      message,
    });
    expect(conditionOf(waiting, 'Ready')).toMatchObject({
      status: 'Unknown',
      reason: 'WaitingForProvisioning',
      message,
    });
    // The hosts are held while Metal3 works on them; no IP is recorded yet.
    expect((waiting.status as { claimedHosts?: unknown[] }).claimedHosts).toHaveLength(3);
    expect((waiting.status as { nodes?: unknown }).nodes).toBeUndefined();
    const events = await cluster.kubeConfig.makeApiClient(CoreV1Api).listNamespacedEvent({ namespace });
    expect(
      events.items.filter((e) => e.involvedObject.name === 'wait' && e.reason === 'WaitingForProvisioning'),
    ).toHaveLength(1);

    // The same event again, and a sweep: nothing new is written or sent.
    const version = (await read('wait')).metadata.resourceVersion;
    expect(
      (await harness.publish(sourceEvent('update', created))).map((d) => [d.status, d.reply?.type]),
    ).toEqual([[204, undefined]]);
    expect(await ping('wait')()).toEqual([]);
    expect((await read('wait')).metadata.resourceVersion).toBe(version);

    // One host done: the message follows; still nothing sent.
    await patchBareMetalHostStatus(cluster.kubeConfig, namespace, 'fresh', {
      provisioning: { state: 'provisioned' },
    });
    await waitForSweep(async () => {
      const condition = conditionOf(await read('wait'), 'HostsResolved');
      return condition?.message?.includes('provision 1 host:') === true;
    }, ping('wait'));
    expect(conditionOf(await read('wait'), 'HostsResolved')?.message).toBe(
      `Waiting for Metal3 to provision 1 host: ${namespace}/writing (provisioning); KUD starts once every host is provisioned`,
    );

    // Metal3 finishes: the installed OS came up with another address, and that one is used.
    await patchBareMetalHostStatus(cluster.kubeConfig, namespace, 'writing', {
      provisioning: { state: 'provisioned' },
      hardware: { nics: nic(2, '10.30.1.2') },
    });
    const sent = await waitForSweep(async () => {
      const condition = conditionOf(await read('wait'), 'HostsResolved');
      return condition?.status === 'True';
    }, ping('wait'));
    expect(sent.map((event) => event.type)).toEqual([EventTypes.hostsResolved]);
    const done = await read('wait');
    expect((done.status as { nodes?: { ip: string }[] }).nodes?.map((node) => node.ip)).toEqual([
      '10.30.0.1',
      '10.30.1.2',
      '10.30.0.3',
    ]);
    expect(conditionOf(done, 'Ready')).toMatchObject({ status: 'Unknown', reason: 'Provisioning' });
  });

  it("stops on Metal3's error state with Metal3's message, and goes on once Metal3 clears it", async () => {
    const namespace = cluster.namespace;
    const { deliveries } = await provision('error', [mac(4), mac(5)]);
    expect(deliveries.map((d) => [d.status, d.reply?.type])).toEqual([[200, EventTypes.provisioningFailed]]);
    const message = `BareMetalHost ${namespace}/broken is in Metal3's provisioning error: Image download failed: 404 Not Found`;
    expect(conditionOf(await read('error'), 'HostsResolved')).toMatchObject({
      status: 'False',
      reason: 'HostProvisioningFailed',
      message,
    });
    expect(conditionOf(await read('error'), 'Ready')).toMatchObject({
      status: 'False',
      reason: 'HostProvisioningFailed',
      message,
    });

    await patchBareMetalHostStatus(cluster.kubeConfig, namespace, 'broken', {
      errorType: null,
      errorMessage: '',
      operationalStatus: 'OK',
      provisioning: { state: 'provisioned' },
    });
    const sent = await waitForSweep(async () => {
      return conditionOf(await read('error'), 'HostsResolved')?.status === 'True';
    }, ping('error'));
    expect(sent.map((event) => event.type)).toEqual([EventTypes.hostsResolved]);
    // An externally provisioned host is not waited for.
    expect((await read('error')).status?.conditions?.find((c) => c.type === 'HostsResolved')?.message).toBe(
      'Resolved 2 nodes (2 from host-nics)',
    );
  });
});
