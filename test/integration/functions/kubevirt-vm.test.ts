/**
 * `cluster-type: kubevirt-vm` (contract section 14) through host-lookup's and inventory-render's
 * real HTTP servers, against KubeVirt's real VirtualMachineInstance CRD (kubevirt.io/kubevirt
 * v1.8.0, test/fixtures/kubevirt) installed into the run's API server: the VMIs of the render
 * golden (test/fixtures/render/vmis) are stored and validated by KubeVirt's own schema, and the
 * inventory the chain writes is the one `bpa render --vmis` prints. VMIs count only in
 * VM_NAMESPACES (contract section 12), as Virtlet pods do.
 *
 * IMITATION: no KubeVirt controllers run; the test writes each VMI's status as virt-handler
 * would (test/support/kubevirt.ts).
 */
import { afterAll, beforeAll, expect, it, describe } from '@jest/globals';
import { readFile } from 'node:fs/promises';
import { CoreV1Api } from '@kubernetes/client-node';
import { EventTypes } from '../../../shared/events/types.js';
import { definition as hostLookup } from '../../../functions/host-lookup/index.js';
import { definition as inventoryRender } from '../../../functions/inventory-render/index.js';
import { createNamespace, deleteNamespace, uniqueNamespaceName } from '../../../local/control-plane/index.js';
import { useTestCluster } from '../../support/cluster.js';
import {
  createVmi,
  fixtureVmis,
  installKubevirtCrd,
  readVmi,
  writeVmiStatus,
} from '../../support/kubevirt.js';
import { ChainHarness, pingEvent, sourceEvent } from './support/chain-harness.js';
import { conditionOf, createProvisioning, provisioningObject, readProvisioning } from './support/fixtures.js';

const cluster = useTestCluster();
const golden = (name: string) => readFile(new URL(`../../golden/${name}`, import.meta.url), 'utf8');

describe('kubevirt-vm clusters from VirtualMachineInstances', () => {
  let harness: ChainHarness;
  const vmis = fixtureVmis();

  beforeAll(async () => {
    await installKubevirtCrd(cluster.kubeConfig);
    harness = new ChainHarness(cluster.kubeConfig, {
      VM_NAMESPACES: cluster.namespace,
      SWEEP_NAMESPACES: cluster.namespace,
    });
    await harness.start([hostLookup, inventoryRender]);
    for (const vmi of vmis.values()) await createVmi(cluster.kubeConfig, cluster.namespace, vmi);
  }, 120_000);
  afterAll(() => harness?.stop());

  const provision = async (
    name: string,
    cluster_: string,
    masters: [string, string][],
    workers?: [string, string][],
  ) => {
    const created = await createProvisioning(
      cluster.kubeConfig,
      provisioningObject({
        name,
        namespace: cluster.namespace,
        cluster: cluster_,
        clusterType: 'kubevirt-vm',
        masters: masters.map(([label, mac]) => ({ label, mac })),
        ...(workers && { workers: workers.map(([label, mac]) => ({ label, mac })) }),
      }),
    );
    return harness.publish(sourceEvent('add', created));
  };

  it('stores the VMIs with their status under KubeVirt’s schema', async () => {
    const stored = await readVmi(cluster.kubeConfig, cluster.namespace, 'kv-master');
    expect(stored.status?.phase).toBe('Running');
    expect(stored.status?.interfaces?.map((i) => [i.mac, i.ipAddress])).toEqual([
      ['52:54:00:6b:00:01', '10.244.2.11'],
      ['52:54:00:6b:00:91', '192.168.60.11'],
    ]);
    // The real schema is enforced: an interface's queueCount must be an integer.
    await expect(
      createVmi(cluster.kubeConfig, cluster.namespace, {
        ...vmis.get('kv-new')!,
        metadata: { ...vmis.get('kv-new')!.metadata, name: 'kv-invalid' },
        status: {
          phase: 'Running',
          interfaces: [{ mac: '52:54:00:6b:00:09', queueCount: 'many' } as object],
        },
      }),
    ).rejects.toMatchObject({ code: 422 });
  });

  it('renders the inventory of Running VMIs, the one bpa render --vmis prints, and claims them', async () => {
    const deliveries = await provision(
      'kv',
      'kv-cluster',
      [['kv-master', '52:54:00:6b:00:01']],
      [['kv-worker', '52:54:00:6b:00:02']],
    );
    expect(deliveries.map((d) => [d.target, d.status, d.reply?.type])).toEqual([
      ['host-lookup', 200, EventTypes.hostsResolved],
      ['inventory-render', 200, EventTypes.inventoryRendered],
    ]);
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    const inventory = await core.readNamespacedConfigMap({
      name: 'kv-cluster-inventory',
      namespace: cluster.namespace,
    });
    expect(inventory.data?.['hosts.ini']).toBe(await golden('render/kubevirt.hosts.ini'));
    const status = (await readProvisioning(cluster.kubeConfig, cluster.namespace, 'kv')) as Awaited<
      ReturnType<typeof readProvisioning>
    > & { metadata: { uid: string }; status: { claimedHosts?: unknown[] } };
    expect(status.status.nodes?.map((n) => [n.label, n.ip, n.source])).toEqual([
      ['kv-master', '10.244.2.11', 'kubevirt-vmi'],
      ['kv-worker', '10.244.2.12', 'kubevirt-vmi'],
    ]);
    expect(status.status.claimedHosts).toEqual([
      { kind: 'VirtualMachineInstance', namespace: cluster.namespace, name: 'kv-master' },
      { kind: 'VirtualMachineInstance', namespace: cluster.namespace, name: 'kv-worker' },
    ]);
    const consumer = `${cluster.namespace}/kv/${status.metadata.uid}`;
    for (const name of ['kv-master', 'kv-worker'])
      expect((await readVmi(cluster.kubeConfig, cluster.namespace, name)).metadata.annotations).toMatchObject(
        {
          'bpa.akraino.org/consumer': consumer,
        },
      );
  });

  it('refuses a VMI another Provisioning holds (HostInUse), touching nothing', async () => {
    await provision('kv-second', 'kv-second', [['kv-master', '52:54:00:6b:00:01']]);
    const hosts = conditionOf(
      await readProvisioning(cluster.kubeConfig, cluster.namespace, 'kv-second'),
      'HostsResolved',
    );
    expect(hosts).toMatchObject({
      status: 'False',
      reason: 'HostInUse',
      message: `VM ${cluster.namespace}/kv-master (MAC 52:54:00:6b:00:01) is already used by ${cluster.namespace}/kv`,
    });
  });

  it('a VMI not Running is VmNotFound; one without an IP yet is IpAddressNotFound until KubeVirt reports it', async () => {
    await provision('kv-scheduled', 'kv-scheduled', [['kv-scheduled', '52:54:00:6b:00:04']]);
    expect(
      conditionOf(
        await readProvisioning(cluster.kubeConfig, cluster.namespace, 'kv-scheduled'),
        'HostsResolved',
      ),
    ).toMatchObject({
      status: 'False',
      reason: 'VmNotFound',
      message: 'IP address not found for VM with MAC address 52:54:00:6b:00:04',
    });

    const deliveries = await provision('kv-booting', 'kv-booting', [['kv-booting', '52:54:00:6b:00:03']]);
    expect(deliveries.map((d) => d.reply?.type)).toEqual([EventTypes.provisioningFailed]);
    expect(
      conditionOf(
        await readProvisioning(cluster.kubeConfig, cluster.namespace, 'kv-booting'),
        'HostsResolved',
      ),
    ).toMatchObject({
      status: 'False',
      reason: 'IpAddressNotFound',
      message: 'IP address not found for VM with MAC address 52:54:00:6b:00:03',
    });

    // The guest agent reports the address: the next sweep resolves it, nothing else changed.
    const booting = vmis.get('kv-booting')!;
    await writeVmiStatus(cluster.kubeConfig, cluster.namespace, 'kv-booting', {
      ...booting.status,
      interfaces: [{ name: 'default', mac: '52:54:00:6b:00:03', ipAddress: '10.244.2.13' }],
    });
    await harness.publish(pingEvent());
    const resolved = await readProvisioning(cluster.kubeConfig, cluster.namespace, 'kv-booting');
    expect(conditionOf(resolved, 'HostsResolved')).toMatchObject({ status: 'True' });
    expect(resolved.status?.nodes?.map((n) => [n.label, n.ip, n.source])).toEqual([
      ['kv-booting', '10.244.2.13', 'kubevirt-vmi'],
    ]);
  });

  it('takes VMIs from VM_NAMESPACES only, and says so when none is configured', async () => {
    // A tenant's own namespace, not a VM namespace: a VMI there claiming a MAC answers for nothing.
    const elsewhere = await createNamespace(cluster.kubeConfig, uniqueNamespaceName('kv-tenant'));
    try {
      await createVmi(cluster.kubeConfig, elsewhere, {
        ...vmis.get('kv-worker')!,
        metadata: { ...vmis.get('kv-worker')!.metadata, name: 'lookalike' },
        status: {
          phase: 'Running',
          interfaces: [{ name: 'default', mac: '52:54:00:6b:00:0f', ipAddress: '10.66.0.15' }],
        },
      });
      await provision('kv-lookalike', 'kv-lookalike', [['m', '52:54:00:6b:00:0f']]);
      expect(
        conditionOf(
          await readProvisioning(cluster.kubeConfig, cluster.namespace, 'kv-lookalike'),
          'HostsResolved',
        ),
      ).toMatchObject({ status: 'False', reason: 'VmNotFound' });
    } finally {
      await deleteNamespace(cluster.kubeConfig, elsewhere);
    }

    const unconfigured = new ChainHarness(cluster.kubeConfig, {});
    await unconfigured.start([hostLookup]);
    try {
      const created = await createProvisioning(
        cluster.kubeConfig,
        provisioningObject({
          name: 'kv-unconfigured',
          namespace: cluster.namespace,
          cluster: 'kv-unconfigured',
          clusterType: 'kubevirt-vm',
          masters: [{ label: 'm', mac: '52:54:00:6b:00:01' }],
        }),
      );
      await unconfigured.publish(sourceEvent('add', created));
      expect(
        conditionOf(
          await readProvisioning(cluster.kubeConfig, cluster.namespace, 'kv-unconfigured'),
          'HostsResolved',
        ),
      ).toMatchObject({
        status: 'False',
        reason: 'VmNamespacesNotConfigured',
        message: expect.stringContaining('cluster-type kubevirt-vm needs VM_NAMESPACES'),
      });
    } finally {
      await unconfigured.stop();
    }
  });
});
