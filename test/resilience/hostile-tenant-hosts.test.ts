/**
 * Hostile tenants against the hosts (contract section 12 "One owner per host", issue 23 items 2
 * and 9): a tenant (test/resilience/support/tenant.ts: a ServiceAccount holding only its own
 * namespace's rights) names the MAC of a host another tenant's Provisioning holds. Each attack is
 * one `Attacks` line of the tally; it gained something if the tenant got a KUD Job, an inventory
 * line with the victim's host, a `spec.image` write on it, or took the host away from its owner.
 *
 * host-lookup, inventory-render and kud-job-launch run behind their real HTTP servers on the real
 * API server with Metal3's real BareMetalHost CRD; the tenant writes its objects through its own
 * token, and the test delivers the events the ApiServerSource would send for them. IMITATION: the
 * Images' status (Ready) is written by the admin as image-verify would write it after an upload,
 * and the VM pod is written by the test (test/support/vm-namespace.ts: no Virtlet here).
 */
import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { BatchV1Api, CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { EventTypes } from '../../shared/events/types.js';
import { definition as hostLookup } from '../../functions/host-lookup/index.js';
import { definition as inventoryRender } from '../../functions/inventory-render/index.js';
import { definition as kudJobLaunch } from '../../functions/kud-job-launch/index.js';
import { createNamespace, deleteNamespace, uniqueNamespaceName } from '../../local/control-plane/index.js';
import { useTestCluster } from '../support/cluster.js';
import { createKudSshKeySecret } from '../support/node.js';
import { createVmPod } from '../support/vm-namespace.js';
import { ChainHarness, pingEvent, sourceEvent } from '../integration/functions/support/chain-harness.js';
import {
  bpaGroup,
  conditionOf,
  createBareMetalHost,
  provisioningObject,
  readProvisioning,
} from '../integration/functions/support/fixtures.js';
import { FaultTally } from './report/tally.js';
import { createTenant, type Tenant } from './support/tenant.js';

const cluster = useTestCluster();
const tally = new FaultTally(import.meta.url);
const bmh = { group: 'metal3.io', version: 'v1alpha1', plural: 'baremetalhosts' } as const;
const victimMac = 'ee:23:66:00:00:01';
const victimVmMac = 'ee:23:66:00:00:21';
/** What host-lookup writes on the victim's host for the victim's Image (bpa.akraino.org/image: ours). */
const victimImage = {
  url: 'http://image-download.test/victim',
  checksum: 'a'.repeat(64),
  checksumType: 'sha256',
  format: 'raw',
};

interface StoredHost {
  metadata: { resourceVersion: string; annotations?: Record<string, string> };
  spec: { consumerRef?: Record<string, string>; image?: Record<string, string> };
}

describe('a hostile tenant against another tenant’s hosts', () => {
  let harness: ChainHarness;
  let tenant: Tenant;
  let hosts = '';
  let vms = '';
  let functionsNamespace = '';
  const victim = () => cluster.namespace;
  const admin = () => cluster.kubeConfig.makeApiClient(CustomObjectsApi);
  const readHost = async () =>
    (await admin().getNamespacedCustomObject({ ...bmh, namespace: hosts, name: 'victim-1' })) as StoredHost;
  const victimRef = async (name: string) => {
    const live = await readProvisioning(cluster.kubeConfig, victim(), name);
    return {
      apiVersion: 'bpa.akraino.org/v1alpha1',
      kind: 'Provisioning',
      namespace: victim(),
      name,
      uid: live.metadata.uid,
    };
  };

  /** What the attacker's cluster got anywhere: its KUD Jobs, and inventories naming the victim's host. */
  const gains = async (clusterName: string, ip: string) => {
    const jobs = await cluster.kubeConfig
      .makeApiClient(BatchV1Api)
      .listJobForAllNamespaces({ labelSelector: `cluster=${clusterName}` });
    const inventories = (
      await cluster.kubeConfig.makeApiClient(CoreV1Api).listConfigMapForAllNamespaces()
    ).items.filter(
      (cm) =>
        cm.metadata?.name === `${clusterName}-inventory` ||
        (cm.metadata?.name?.startsWith(clusterName) && JSON.stringify(cm.data ?? {}).includes(ip)),
    );
    return {
      jobs: jobs.items.map((j) => `${j.metadata?.namespace}/${j.metadata?.name}`),
      inventories: inventories.map((c) => c.metadata?.name),
    };
  };

  const createReadyImage = async (
    as: KubeConfig,
    namespace: string,
    name: string,
    sha256: string,
    url: string,
  ) => {
    const image = (await as.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      ...bpaGroup,
      plural: 'images',
      namespace,
      body: {
        apiVersion: 'bpa.akraino.org/v1alpha1',
        kind: 'Image',
        metadata: { name, namespace },
        spec: {
          type: 'os',
          owner: namespace,
          clusterName: name.split('.')[0],
          imageName: name,
          length: 4096,
          format: 'raw',
        },
      },
    })) as Record<string, unknown>;
    await admin().replaceNamespacedCustomObjectStatus({
      ...bpaGroup,
      plural: 'images',
      namespace,
      name,
      body: { ...image, status: { phase: 'Ready', sha256, url } },
    });
  };

  /** The tenant creates its Provisioning with its own token; the source's event follows. */
  const attack = async (name: string, mac: string, extra: { image?: string; clusterType?: string } = {}) => {
    const object = provisioningObject({
      name,
      namespace: tenant.namespace,
      cluster: name,
      ...(extra.clusterType ? { clusterType: extra.clusterType } : {}),
      masters: [{ label: 'm', mac }],
    });
    const created = (await tenant.kubeConfig.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      ...bpaGroup,
      plural: 'provisionings',
      namespace: tenant.namespace,
      body: { ...object, spec: { ...object.spec, ...(extra.image ? { image: { name: extra.image } } : {}) } },
    })) as typeof object;
    return harness.publish(sourceEvent('add', created));
  };

  beforeAll(async () => {
    hosts = await createNamespace(cluster.kubeConfig, uniqueNamespaceName('hosts'));
    vms = await createNamespace(cluster.kubeConfig, uniqueNamespaceName('vms'));
    functionsNamespace = await createNamespace(cluster.kubeConfig, uniqueNamespaceName('bpa-functions'));
    const attackerNamespace = await createNamespace(cluster.kubeConfig, uniqueNamespaceName('attacker'));
    tenant = await createTenant(cluster.kubeConfig, attackerNamespace);
    for (const namespace of [victim(), attackerNamespace, functionsNamespace])
      await createKudSshKeySecret(cluster.kubeConfig, namespace);
    await createBareMetalHost(cluster.kubeConfig, {
      name: 'victim-1',
      namespace: hosts,
      bootMac: victimMac,
      nics: [{ name: 'eth0', mac: victimMac, ip: '10.66.0.1' }],
    });
    await createVmPod(cluster.kubeConfig, {
      namespace: vms,
      name: 'victim-vm',
      networks: [{ name: 'default', mac: victimVmMac, ips: ['10.244.66.21'], default: true }],
    });
    // Each tenant's own Image, uploaded and verified (its status as image-verify writes it).
    await createReadyImage(
      tenant.kubeConfig,
      attackerNamespace,
      'evil.os.node',
      'e'.repeat(64),
      'http://image-download.test/evil',
    );
    await createReadyImage(
      cluster.kubeConfig,
      victim(),
      'victim.os.node',
      victimImage.checksum,
      victimImage.url,
    );
    harness = new ChainHarness(cluster.kubeConfig, {
      BMH_NAMESPACE: hosts,
      VM_NAMESPACES: vms,
      IP_SOURCES: 'nics',
      FUNCTIONS_NAMESPACE: functionsNamespace,
      SWEEP_NAMESPACES: `${victim()},${attackerNamespace}`,
    });
    await harness.start([hostLookup, inventoryRender, kudJobLaunch]);

    // The victim provisions first: its host and its VM are its own.
    for (const [name, mac, clusterType] of [
      ['victim', victimMac, undefined],
      ['victim-vms', victimVmMac, 'virtlet-vm'],
    ] as const) {
      const object = provisioningObject({
        name,
        namespace: victim(),
        cluster: name,
        ...(clusterType ? { clusterType } : {}),
        masters: [{ label: 'm', mac }],
      });
      if (!clusterType) Object.assign(object.spec, { image: { name: 'victim.os.node' } });
      const created = await admin().createNamespacedCustomObject({
        ...bpaGroup,
        plural: 'provisionings',
        namespace: victim(),
        body: object,
      });
      const deliveries = await harness.publish(sourceEvent('add', created as typeof object));
      expect(deliveries[0]?.reply?.type).toBe(EventTypes.hostsResolved);
    }
  }, 120_000);

  afterAll(async () => {
    await harness?.stop();
    for (const namespace of [hosts, vms, functionsNamespace, tenant?.namespace])
      if (namespace) await deleteNamespace(cluster.kubeConfig, namespace);
  });

  it('naming another tenant’s MAC gets no Job, no inventory line, no spec.image write on that host', async () => {
    const before = await readHost();
    const deliveries = await attack('evil', victimMac, { image: 'evil.os.node' });
    await harness.deliver('host-lookup', pingEvent()); // the sweep, too, gives it nothing
    const status = await readProvisioning(cluster.kubeConfig, tenant.namespace, 'evil');
    const after = await readHost();
    const got = await gains('evil', '10.66.0.1');
    const gainedNothing =
      got.jobs.length === 0 &&
      got.inventories.length === 0 &&
      after.metadata.resourceVersion === before.metadata.resourceVersion &&
      isDeepStrictEqual(after.spec.image, victimImage);
    tally.record('Attacks', gainedNothing);
    expect(got).toEqual({ jobs: [], inventories: [] });
    expect(after.spec.image).toEqual(victimImage);
    expect(after.spec.consumerRef).toEqual(await victimRef('victim'));
    expect(deliveries.map((d) => d.reply?.type)).toEqual([EventTypes.provisioningFailed]);
    expect(conditionOf(status, 'HostsResolved')).toMatchObject({
      reason: 'HostInUse',
      message: `Host ${hosts}/victim-1 (MAC ${victimMac}) is already used by ${victim()}/victim`,
    });
    expect(gainedNothing).toBe(true);
  });

  it('naming another tenant’s VM gets no Job and no inventory line, and leaves the VM its owner’s', async () => {
    await attack('evil-vm', victimVmMac, { clusterType: 'virtlet-vm' });
    const pod = await cluster.kubeConfig
      .makeApiClient(CoreV1Api)
      .readNamespacedPod({ namespace: vms, name: 'victim-vm' });
    const got = await gains('evil-vm', '10.244.66.21');
    const owner = await victimRef('victim-vms');
    const consumer = pod.metadata?.annotations?.['bpa.akraino.org/consumer'];
    tally.record(
      'Attacks',
      got.jobs.length === 0 &&
        got.inventories.length === 0 &&
        consumer === `${victim()}/victim-vms/${owner.uid}`,
    );
    expect(got).toEqual({ jobs: [], inventories: [] });
    expect(consumer).toBe(`${victim()}/victim-vms/${owner.uid}`);
  });

  it('deleting its Provisioning that named the host releases nothing of the victim’s', async () => {
    await attack('evil-release', victimMac);
    await tenant.kubeConfig.makeApiClient(CustomObjectsApi).deleteNamespacedCustomObject({
      ...bpaGroup,
      plural: 'provisionings',
      namespace: tenant.namespace,
      name: 'evil-release',
    });
    await harness.deliver('kud-job-launch', pingEvent()); // its deletion: releases what it holds, nothing
    const after = await readHost();
    const stillVictims = isDeepStrictEqual(after.spec.consumerRef, await victimRef('victim'));
    const gainedNothing = stillVictims && isDeepStrictEqual(after.spec.image, victimImage);
    tally.record('Attacks', gainedNothing);
    expect(after.spec.consumerRef).toEqual(await victimRef('victim'));
    expect(after.spec.image).toEqual(victimImage);
    expect(gainedNothing).toBe(true);
  });
});
