/**
 * Contract section 13 against Metal3 itself: the real baremetal-operator (v0.6.0, built from the
 * Go module proxy; test/support/metal3.ts) with its fixture provisioner, which needs no Ironic,
 * drives the BareMetalHosts on the real API server with Metal3's BareMetalHost CRD. host-lookup
 * runs behind its real HTTP server; sweeps are driven one ping at a time.
 *
 * Chosen over Ironic from Debian's packages (fake-hardware driver): BMO is the peer host-lookup
 * reads (status.provisioning.state, errorType, errorMessage are BMO's words, whatever runs
 * below it), its fixture provisioner walks the same state machine (registering, inspecting,
 * available, provisioning, provisioned) in seconds, and it needs one process instead of Ironic,
 * its database, its API and BMO's Ironic provisioner on top.
 *
 * What the fixture cannot show: an address that changes once the OS boots (its inspected NICs
 * are fixed); that part is test/integration/functions/provisioning-wait.test.ts, on hand-written
 * BareMetalHost status.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CoreV1Api, CustomObjectsApi, Watch } from '@kubernetes/client-node';
import { EventTypes } from '../../../shared/events/types.js';
import { definition as hostLookup } from '../../../functions/host-lookup/index.js';
import { useTestCluster } from '../../support/cluster.js';
import { startMetal3, type Metal3 } from '../../support/metal3.js';
import { ChainHarness, pingEvent, sourceEvent } from './support/chain-harness.js';
import {
  conditionOf,
  createProvisioning,
  createImage,
  provisioningObject,
  readProvisioning,
} from './support/fixtures.js';

const cluster = useTestCluster();
const bmh = { group: 'metal3.io', version: 'v1alpha1', plural: 'baremetalhosts' } as const;
const sha256 = 'd00d'.padEnd(64, '0');
/** The fixture provisioner's first inspected NIC: every host it inspects has it. */
const fixtureMac = 'ab:cd:12:34:56:78';
const fixtureIp = '192.168.100.1';

interface Host {
  metadata: { name: string };
  spec: { image?: Record<string, string>; consumerRef?: { name?: string } };
  status?: { provisioning?: { state?: string }; errorType?: string; errorMessage?: string };
}

describe('host-lookup with the real baremetal-operator', () => {
  let harness: ChainHarness;
  let metal3: Metal3;
  let stopWatch: (() => void) | undefined;
  /** Every provisioning state each host went through, as BMO wrote them (a watch sees each write). */
  const states = new Map<string, string[]>();
  const custom = () => cluster.kubeConfig.makeApiClient(CustomObjectsApi);
  const readHost = async (name: string) =>
    (await custom().getNamespacedCustomObject({ ...bmh, namespace: cluster.namespace, name })) as Host;

  /** A BareMetalHost as an operator enrols it: spec only; BMO writes all of its status. */
  const enrol = (name: string, bootMac: string, credentialsName: string) =>
    custom().createNamespacedCustomObject({
      ...bmh,
      namespace: cluster.namespace,
      body: {
        apiVersion: 'metal3.io/v1alpha1',
        kind: 'BareMetalHost',
        metadata: { name, namespace: cluster.namespace },
        spec: {
          online: true,
          bootMACAddress: bootMac,
          // The fixture provisioner never dials it.
          bmc: { address: 'ipmi://127.0.0.1:6230', credentialsName },
        },
      },
    });

  const ping = async () => {
    expect((await harness.deliver('host-lookup', pingEvent())).status).toBe(204);
    return harness.collector.drain();
  };

  /** Sweeps until `done` holds for the Provisioning, checking `each` after every sweep. */
  const sweepUntil = async (
    name: string,
    done: (status: Awaited<ReturnType<typeof readProvisioning>>) => boolean,
    each: (sent: { type: string }[]) => Promise<void>,
    timeoutMs: number,
  ) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const sent = await ping();
      await each(sent);
      const status = await readProvisioning(cluster.kubeConfig, cluster.namespace, name);
      if (done(status)) return status;
      if (Date.now() > deadline)
        throw new Error(
          `timed out: ${JSON.stringify(status.status?.conditions)}\nBMO states ${JSON.stringify([...states])}\n${metal3.logTail()}`,
        );
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  };

  beforeAll(async () => {
    const namespace = cluster.namespace;
    metal3 = await startMetal3(cluster.kubeConfig, cluster.kubeconfigPath, namespace);
    const controller = await new Watch(cluster.kubeConfig).watch(
      `/apis/metal3.io/v1alpha1/namespaces/${namespace}/baremetalhosts`,
      {},
      (_phase, object: Host) => {
        const state = object.status?.provisioning?.state;
        const seen = states.get(object.metadata.name) ?? [];
        if (state && seen.at(-1) !== state) seen.push(state);
        states.set(object.metadata.name, seen);
      },
      () => undefined,
    );
    stopWatch = () => controller.abort();
    await cluster.kubeConfig.makeApiClient(CoreV1Api).createNamespacedSecret({
      namespace,
      body: { metadata: { name: 'bmc' }, stringData: { username: 'admin', password: 'not-used' } },
    });
    await createImage(cluster.kubeConfig, {
      name: 'metal.os.node',
      namespace,
      clusterName: 'metal',
      status: { phase: 'Ready', sha256, url: `http://image-download.test/images/${namespace}/metal.os.node` },
    });
    harness = new ChainHarness(cluster.kubeConfig, {
      BMH_NAMESPACE: namespace,
      IP_SOURCES: 'nics',
      SWEEP_NAMESPACES: namespace,
    });
    await harness.start([hostLookup]);
  }, 900_000);

  afterAll(async () => {
    stopWatch?.();
    await harness?.stop();
    await metal3?.stop();
  });

  it('writes spec.image, waits while Metal3 provisions, and sends hosts.resolved only once the host is provisioned', async () => {
    const namespace = cluster.namespace;
    await enrol('server-1', fixtureMac, 'bmc');
    const object = provisioningObject({
      name: 'metal',
      namespace,
      cluster: 'metal',
      masters: [{ label: 'master-1', mac: fixtureMac }],
    });
    const created = await createProvisioning(cluster.kubeConfig, {
      ...object,
      spec: { ...object.spec, image: { name: 'metal.os.node' } } as typeof object.spec,
    });
    const first = await harness.publish(sourceEvent('add', created));
    // The host was just enrolled: Metal3 has not even registered it.
    expect(first.map((d) => [d.status, d.reply?.type])).toEqual([[204, undefined]]);
    const waiting = await readProvisioning(cluster.kubeConfig, namespace, 'metal');
    expect(conditionOf(waiting, 'HostsResolved')).toMatchObject({
      status: 'Unknown',
      reason: 'WaitingForProvisioning',
    });
    expect(conditionOf(waiting, 'HostsResolved')?.message).toMatch(
      new RegExp(`^Waiting for Metal3 to provision 1 host: ${namespace}/server-1 \\(`),
    );
    expect(conditionOf(waiting, 'Ready')).toMatchObject({
      status: 'Unknown',
      reason: 'WaitingForProvisioning',
    });
    // Claimed and given the image, which is what makes Metal3 provision it.
    const host = await readHost('server-1');
    expect(host.spec.consumerRef?.name).toBe('metal');
    expect(host.spec.image).toMatchObject({
      url: `http://image-download.test/images/${namespace}/metal.os.node`,
    });

    const messages = new Set<string>();
    let resolvedSent = 0;
    const done = await sweepUntil(
      'metal',
      (status) => conditionOf(status, 'HostsResolved')?.status === 'True',
      async (sent) => {
        const state = (await readHost('server-1')).status?.provisioning?.state;
        const resolved = sent.filter((event) => event.type === EventTypes.hostsResolved);
        // States only move forward here: not provisioned after the sweep means not during it.
        if (state !== 'provisioned') expect(resolved).toEqual([]);
        resolvedSent += resolved.length;
        const status = await readProvisioning(cluster.kubeConfig, namespace, 'metal');
        const condition = conditionOf(status, 'HostsResolved');
        if (condition?.status === 'Unknown') {
          expect(condition.reason).toBe('WaitingForProvisioning');
          messages.add(condition.message ?? '');
        }
      },
      300_000,
    );
    // BMO really took the host through its state machine, and host-lookup said so meanwhile.
    const seen = states.get('server-1') ?? [];
    expect(seen.at(-1)).toBe('provisioned');
    expect(seen).toEqual(expect.arrayContaining(['inspecting', 'provisioning']));
    expect([...messages].join('\n')).toMatch(
      /server-1 \((registering|inspecting|preparing|available|provisioning|no provisioning state yet)\)/,
    );
    // The address is the one Metal3 reports for the provisioned host.
    expect((done.status as { nodes?: unknown }).nodes).toEqual([
      { label: 'master-1', roles: ['master', 'worker'], mac: fixtureMac, ip: fixtureIp, source: 'host-nics' },
    ]);
    expect(conditionOf(done, 'HostsResolved')?.message).toContain('Resolved 1 node (1 from host-nics)');
    // Sent once, by the sweep that found the host provisioned.
    expect(resolvedSent).toBe(1);
  }, 420_000);

  it("says Metal3's error with Metal3's message, and goes on once Metal3 recovers the host", async () => {
    const namespace = cluster.namespace;
    await enrol('server-2', '52:54:00:13:00:02', 'bmc-server-2');
    // BMO refuses to register a host whose BMC credentials Secret does not exist.
    for (let i = 0; i < 600; i++) {
      if ((await readHost('server-2')).status?.errorType) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const metal3Host = await readHost('server-2');
    expect(metal3Host.status?.errorType).toBe('registration error');
    const created = await createProvisioning(
      cluster.kubeConfig,
      provisioningObject({
        name: 'broken',
        namespace,
        cluster: 'broken',
        masters: [{ label: 'master-1', mac: '52:54:00:13:00:02' }],
      }),
    );
    const deliveries = await harness.publish(sourceEvent('add', created));
    expect(deliveries.map((d) => [d.status, d.reply?.type])).toEqual([[200, EventTypes.provisioningFailed]]);
    const failed = await readProvisioning(cluster.kubeConfig, namespace, 'broken');
    expect(conditionOf(failed, 'HostsResolved')).toMatchObject({
      status: 'False',
      reason: 'HostProvisioningFailed',
      message: `BareMetalHost ${namespace}/server-2 is in Metal3's registration error: ${metal3Host.status?.errorMessage}`,
    });
    expect(metal3Host.status?.errorMessage).toContain(`${namespace}/bmc-server-2`);
    expect(conditionOf(failed, 'Ready')).toMatchObject({ status: 'False', reason: 'HostProvisioningFailed' });

    // The operator creates the Secret; Metal3 registers the host and the sweep notices.
    await cluster.kubeConfig.makeApiClient(CoreV1Api).createNamespacedSecret({
      namespace,
      body: { metadata: { name: 'bmc-server-2' }, stringData: { username: 'admin', password: 'not-used' } },
    });
    const recovered = await sweepUntil(
      'broken',
      (status) => conditionOf(status, 'HostsResolved')?.status === 'Unknown',
      async () => undefined,
      300_000,
    );
    // No image was named, so Metal3 leaves the host available: it is waited for, not failed.
    expect(conditionOf(recovered, 'HostsResolved')).toMatchObject({ reason: 'WaitingForProvisioning' });
    expect(conditionOf(recovered, 'HostsResolved')?.message).toContain(`${namespace}/server-2 (`);
  }, 420_000);
});
