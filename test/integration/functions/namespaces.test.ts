/**
 * Where host-lookup looks (contract section 10, Namespaces): BareMetalHosts only in
 * BMH_NAMESPACE (shipped default `metal3`; every namespace only when set empty on purpose) and
 * Virtlet VM pods only in VM_NAMESPACES (none by default). A tenant's own BareMetalHost or a pod
 * dressed as a VM in the tenant's namespace answers for nothing.
 */
import { createVmPod } from '../../support/vm-namespace.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { EventTypes } from '../../../shared/events/types.js';
import { definition as hostLookup } from '../../../functions/host-lookup/index.js';
import { hostLookupConfigSchema } from '../../../functions/host-lookup/config.js';
import { createNamespace, deleteNamespace, uniqueNamespaceName } from '../../../local/control-plane/index.js';
import { useTestCluster } from '../../support/cluster.js';
import { ChainHarness, sourceEvent } from './support/chain-harness.js';
import {
  conditionOf,
  createBareMetalHost,
  createProvisioning,
  provisioningObject,
  readProvisioning,
} from './support/fixtures.js';

const cluster = useTestCluster();

/** A Running pod that looks like a Virtlet VM with this MAC (test/support/vm-namespace.ts). */
const createVmLookalike = (namespace: string, name: string, mac: string, ip: string) =>
  createVmPod(cluster.kubeConfig, {
    namespace,
    name,
    networks: [{ name: 'n', interface: 'eth0', ips: [ip], mac, default: true }],
    podIP: ip,
  });

describe('BMH_NAMESPACE and VM_NAMESPACES', () => {
  let platform = '';
  const started: ChainHarness[] = [];
  const hostLookupWith = async (env: Record<string, string>) => {
    const harness = new ChainHarness(cluster.kubeConfig, env);
    await harness.start([hostLookup]);
    started.push(harness);
    return harness;
  };

  beforeAll(async () => {
    // The platform namespace (Metal3's hosts, the VMs), apart from the tenant's (cluster.namespace).
    platform = await createNamespace(cluster.kubeConfig, uniqueNamespaceName('platform'));
  });
  afterAll(async () => {
    for (const harness of started) await harness.stop();
    if (platform) await deleteNamespace(cluster.kubeConfig, platform);
  });

  it('ships metal3 as the BareMetalHost namespace; empty only on purpose means every namespace', () => {
    expect(hostLookupConfigSchema.parse({}).BMH_NAMESPACE).toBe('metal3');
    expect(hostLookupConfigSchema.parse({ BMH_NAMESPACE: 'hosts' }).BMH_NAMESPACE).toBe('hosts');
    expect(hostLookupConfigSchema.parse({ BMH_NAMESPACE: '' }).BMH_NAMESPACE).toBeUndefined();
    expect(hostLookupConfigSchema.parse({}).VM_NAMESPACES).toEqual([]);
    expect(hostLookupConfigSchema.parse({ VM_NAMESPACES: 'vms-a, vms-b' }).VM_NAMESPACES).toEqual([
      'vms-a',
      'vms-b',
    ]);
  });

  it("ignores a tenant's own BareMetalHost: only BMH_NAMESPACE's hosts answer", async () => {
    const tenant = cluster.namespace;
    // The tenant plants a host with the MAC in its own namespace; the platform has another one.
    await createBareMetalHost(cluster.kubeConfig, {
      name: 'planted',
      namespace: tenant,
      bootMac: 'ba:00:00:00:00:01',
      nics: [{ name: 'eth0', mac: 'ba:00:00:00:00:01', ip: '10.66.0.1' }],
    });
    await createBareMetalHost(cluster.kubeConfig, {
      name: 'real',
      namespace: platform,
      bootMac: 'ba:00:00:00:00:02',
      nics: [{ name: 'eth0', mac: 'ba:00:00:00:00:02', ip: '10.77.0.2' }],
    });
    const harness = await hostLookupWith({ BMH_NAMESPACE: platform, IP_SOURCES: 'nics' });
    const planted = await createProvisioning(
      cluster.kubeConfig,
      provisioningObject({
        name: 'planted',
        namespace: tenant,
        cluster: 'planted',
        masters: [{ label: 'm', mac: 'ba:00:00:00:00:01' }],
      }),
    );
    expect((await harness.publish(sourceEvent('add', planted))).map((d) => d.reply?.type)).toEqual([
      EventTypes.provisioningFailed,
    ]);
    expect(
      conditionOf(await readProvisioning(cluster.kubeConfig, tenant, 'planted'), 'HostsResolved'),
    ).toMatchObject({
      status: 'False',
      reason: 'HostNotFound',
      message: 'Host with MAC Address ba:00:00:00:00:01 not found',
    });
    const real = await createProvisioning(
      cluster.kubeConfig,
      provisioningObject({
        name: 'real',
        namespace: tenant,
        cluster: 'real',
        masters: [{ label: 'm', mac: 'ba:00:00:00:00:02' }],
      }),
    );
    expect((await harness.publish(sourceEvent('add', real))).map((d) => d.reply?.type)).toEqual([
      EventTypes.hostsResolved,
    ]);
    expect((await readProvisioning(cluster.kubeConfig, tenant, 'real')).status?.nodes?.[0]?.ip).toBe(
      '10.77.0.2',
    );
  });

  it('takes VM pods from VM_NAMESPACES only, and says so when none is configured', async () => {
    const tenant = cluster.namespace;
    await createVmLookalike(tenant, 'fake-vm', 'de:ad:be:00:00:01', '10.66.1.1');
    await createVmLookalike(platform, 'real-vm', 'de:ad:be:00:00:02', '10.77.1.2');
    const vm = (name: string, mac: string) =>
      provisioningObject({
        name,
        namespace: tenant,
        cluster: name,
        clusterType: 'virtlet-vm',
        masters: [{ label: 'vm', mac }],
      });

    const unconfigured = await hostLookupWith({ BMH_NAMESPACE: platform });
    const first = await createProvisioning(cluster.kubeConfig, vm('vm-unconfigured', 'de:ad:be:00:00:02'));
    await unconfigured.publish(sourceEvent('add', first));
    expect(
      conditionOf(await readProvisioning(cluster.kubeConfig, tenant, 'vm-unconfigured'), 'Ready'),
    ).toMatchObject({
      status: 'False',
      reason: 'VmNamespacesNotConfigured',
      message: expect.stringContaining('VM_NAMESPACES'),
    });

    const configured = await hostLookupWith({ BMH_NAMESPACE: platform, VM_NAMESPACES: platform });
    const fake = await createProvisioning(cluster.kubeConfig, vm('vm-fake', 'de:ad:be:00:00:01'));
    await configured.publish(sourceEvent('add', fake));
    expect(
      conditionOf(await readProvisioning(cluster.kubeConfig, tenant, 'vm-fake'), 'HostsResolved'),
    ).toMatchObject({
      status: 'False',
      reason: 'VmNotFound',
    });
    const real = await createProvisioning(cluster.kubeConfig, vm('vm-real', 'de:ad:be:00:00:02'));
    await configured.publish(sourceEvent('add', real));
    expect((await readProvisioning(cluster.kubeConfig, tenant, 'vm-real')).status?.nodes?.[0]?.ip).toBe(
      '10.77.1.2',
    );
  });
});
