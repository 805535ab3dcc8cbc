/**
 * Contract section 14, the preflight, on the real API server with Metal3's real BareMetalHost CRD
 * (METAL3_CRDS_DIR): a node's cpu and memory against its host's inspected hardware
 * (status.hardware.cpu.count, ramMebibytes) before anything is written to a host. The hosts'
 * status is hand-written as Metal3's inspection writes it: an IMITATION of Metal3 (its fixture
 * provisioner reports no CPU count or memory). host-lookup runs behind its real HTTP server; the
 * Image's status is written as image-verify writes it.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { EventTypes } from '../../../shared/events/types.js';
import { useTestCluster } from '../../support/cluster.js';
import { type ChainHarness, sourceEvent } from './support/chain-harness.js';
import {
  bpaGroup,
  conditionOf,
  createBareMetalHost,
  createImage,
  createProvisioning,
  patchBareMetalHostStatus,
  provisioningObject,
  readProvisioning,
  type NodeSpec,
} from './support/fixtures.js';
import { startHostLookup, sweepFor, waitForSweep } from './support/sweep.js';

const cluster = useTestCluster();
const bmh = { group: 'metal3.io', version: 'v1alpha1', plural: 'baremetalhosts' } as const;
const smallMac = '52:54:00:31:00:01';
const freshMac = '52:54:00:31:00:02';

interface StoredHost {
  spec: { consumerRef?: unknown; image?: unknown };
}

describe('the preflight of cpu and memory (contract section 14)', () => {
  let harness: ChainHarness;
  const custom = () => cluster.kubeConfig.makeApiClient(CustomObjectsApi);
  const readHost = async (name: string) =>
    (await custom().getNamespacedCustomObject({ ...bmh, namespace: cluster.namespace, name })) as StoredHost;
  const read = (name: string) => readProvisioning(cluster.kubeConfig, cluster.namespace, name);
  const spec = (masters: NodeSpec[]) => {
    const object = provisioningObject({ name: 'x', namespace: cluster.namespace, cluster: 'x', masters });
    return { ...object.spec, image: { name: 'edge.os.node' } };
  };
  const provision = async (name: string, masters: NodeSpec[]) => {
    const object = provisioningObject({ name, namespace: cluster.namespace, cluster: name, masters });
    const created = await createProvisioning(cluster.kubeConfig, {
      ...object,
      spec: spec(masters) as typeof object.spec,
    });
    return harness.publish(sourceEvent('add', created));
  };

  beforeAll(async () => {
    const namespace = cluster.namespace;
    await createImage(cluster.kubeConfig, {
      name: 'edge.os.node',
      namespace,
      clusterName: 'edge',
      status: {
        phase: 'Ready',
        sha256: 'c0ffee'.padEnd(64, '0'),
        url: `http://image-download.test/images/${namespace}/edge.os.node`,
      },
    });
    await createBareMetalHost(cluster.kubeConfig, {
      name: 'small',
      namespace,
      bootMac: smallMac,
      nics: [{ name: 'eth0', mac: smallMac, ip: '10.31.0.1' }],
      hardware: { cpus: 4, ramMebibytes: 8192 },
    });
    await createBareMetalHost(cluster.kubeConfig, {
      name: 'fresh',
      namespace,
      bootMac: freshMac,
      state: 'inspecting',
    });
    harness = await startHostLookup(cluster.kubeConfig, namespace);
  });

  afterAll(() => harness?.stop());

  it('stops a host too small before claiming or reimaging it, and goes on once the spec asks less', async () => {
    const namespace = cluster.namespace;
    const deliveries = await provision('big', [{ label: 'master-1', mac: smallMac, cpu: 8, memory: '16Gi' }]);
    expect(deliveries.map((d) => [d.status, d.reply?.type])).toEqual([[200, EventTypes.provisioningFailed]]);
    const message = `Host ${namespace}/small (MAC ${smallMac}) has 4 CPUs and 8192 MiB of memory; node master-1 asks for 8 CPUs and 16Gi of memory`;
    const failed = await read('big');
    for (const type of ['HostsResolved', 'Ready'])
      expect(conditionOf(failed, type)).toMatchObject({
        status: 'False',
        reason: 'PreflightFailed',
        message,
      });
    // It needs a change: kstatus Stalled, so a Flux wait fails with the message.
    expect(conditionOf(failed, 'Stalled')).toMatchObject({ status: 'True', reason: 'PreflightFailed' });
    // Nothing written to the host: not claimed, no image.
    const untouched = await readHost('small');
    expect(untouched.spec.consumerRef).toBeUndefined();
    expect(untouched.spec.image).toBeUndefined();
    expect((failed.status as { claimedHosts?: unknown[] }).claimedHosts ?? []).toEqual([]);

    // The spec asks what the host has (8Gi is 8192 MiB): resolved, claimed and given the image.
    const patched = await custom().patchNamespacedCustomObject(
      {
        ...bpaGroup,
        plural: 'provisionings',
        namespace,
        name: 'big',
        body: { spec: spec([{ label: 'master-1', mac: smallMac, cpu: 4, memory: '8Gi' }]) },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const resolved = await harness.publish(
      sourceEvent('update', patched as Parameters<typeof sourceEvent>[1]),
    );
    expect(resolved.map((d) => [d.status, d.reply?.type])).toEqual([[200, EventTypes.hostsResolved]]);
    expect(conditionOf(await read('big'), 'HostsResolved')).toMatchObject({ status: 'True' });
    const host = await readHost('small');
    expect(host.spec.consumerRef).toMatchObject({ kind: 'Provisioning', name: 'big' });
    expect(host.spec.image).toMatchObject({
      url: `http://image-download.test/images/${namespace}/edge.os.node`,
    });
  });

  it('waits, untouched, for a host Metal3 has not inspected yet, and goes on once one is big enough', async () => {
    const namespace = cluster.namespace;
    const deliveries = await provision('later', [{ label: 'master-1', mac: freshMac, memory: '16Gi' }]);
    expect(deliveries.map((d) => [d.status, d.reply?.type])).toEqual([[204, undefined]]);
    expect(conditionOf(await read('later'), 'HostsResolved')).toMatchObject({
      status: 'Unknown',
      reason: 'WaitingForProvisioning',
      message: `Waiting for Metal3 to inspect 1 host for the preflight: ${namespace}/fresh (inspecting; node master-1 asks for 16Gi of memory); no host is claimed or given an image until then`,
    });
    expect((await readHost('fresh')).spec).not.toHaveProperty('consumerRef');

    // Inspection finds too little memory: PreflightFailed, still untouched.
    await patchBareMetalHostStatus(cluster.kubeConfig, namespace, 'fresh', {
      provisioning: { state: 'available' },
      hardware: { cpu: { count: 2 }, ramMebibytes: 4096, nics: [] },
    });
    const ping = sweepFor(() => harness, 'later');
    const sent = await waitForSweep(
      async () => conditionOf(await read('later'), 'HostsResolved')?.reason === 'PreflightFailed',
      async () => (await ping()).filter((event) => event.type !== EventTypes.provisioningFailed),
    );
    expect(sent).toEqual([]);
    expect(conditionOf(await read('later'), 'HostsResolved')?.message).toBe(
      `Host ${namespace}/fresh (MAC ${freshMac}) has 4096 MiB of memory; node master-1 asks for 16Gi of memory`,
    );
    expect((await readHost('fresh')).spec).not.toHaveProperty('image');

    // The host is re-inspected with more memory (and provisioned): the sweep lets it through.
    await patchBareMetalHostStatus(cluster.kubeConfig, namespace, 'fresh', {
      provisioning: { state: 'provisioned' },
      hardware: {
        cpu: { count: 2 },
        ramMebibytes: 16384,
        nics: [{ name: 'eth0', mac: freshMac, ip: '10.31.0.2' }],
      },
    });
    const resolved = await waitForSweep(
      async () => conditionOf(await read('later'), 'HostsResolved')?.status === 'True',
      async () => (await ping()).filter((event) => event.type !== EventTypes.provisioningFailed),
    );
    expect(resolved.map((event) => event.type)).toEqual([EventTypes.hostsResolved]);
    expect((await readHost('fresh')).spec.consumerRef).toMatchObject({ kind: 'Provisioning', name: 'later' });
  });
});
