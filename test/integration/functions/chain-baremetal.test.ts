/**
 * The whole chain on a real API server for a bare-metal cluster: Provisioning in → hosts
 * resolved from BareMetalHosts, a DHCP lease file and inspected NICs → hosts.ini in its
 * ConfigMap → the KUD Job, run by the real Job controller on the run's node → IP ConfigMap, Ready,
 * cluster.ready. Each function runs behind its real HTTP server. The KUD image is a test image
 * whose installer exits 0 (test/fixtures/node/kud-installers); the test posts the live Job as the
 * Job ApiServerSource's update event. Nothing writes the Job's status but the Job controller.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BatchV1Api, CoreV1Api } from '@kubernetes/client-node';
import { sha256Hex } from '../../../shared/core/hash.js';
import { kudInstallerScript } from '../../../shared/core/kud-job.js';
import { EventTypes } from '../../../shared/events/types.js';
import { definition as hostLookup } from '../../../functions/host-lookup/index.js';
import { definition as inventoryRender } from '../../../functions/inventory-render/index.js';
import { definition as kudJobLaunch } from '../../../functions/kud-job-launch/index.js';
import { useTestCluster } from '../../support/cluster.js';
import {
  createKudSshKeySecret,
  describeOnNode,
  jobPodLog,
  kudTestImage,
  waitForJobEnd,
} from '../../support/node.js';
import {
  bareMetalExpectedNodes,
  bareMetalLeaseFile,
  bareMetalProvisioning,
  createBareMetalScenarioHosts,
} from './support/baremetal-scenario.js';
import { ChainHarness, jobUpdateEvent, sourceEvent } from './support/chain-harness.js';
import { conditionOf, createProvisioning, readProvisioning } from './support/fixtures.js';

const cluster = useTestCluster();
const golden = (name: string) => readFile(new URL(`../../golden/functions/${name}`, import.meta.url), 'utf8');

describeOnNode('bare-metal chain', () => {
  let harness: ChainHarness;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bpa-chain-'));
    await writeFile(join(dir, 'dhcpd.leases'), bareMetalLeaseFile);
    const namespace = cluster.namespace;
    await createBareMetalScenarioHosts(cluster.kubeConfig, namespace);
    harness = new ChainHarness(cluster.kubeConfig, {
      BMH_NAMESPACE: namespace,
      LEASES_SOURCE: join(dir, 'dhcpd.leases'),
      KUD_IMAGE: kudTestImage.succeeds,
    });
    await harness.start([hostLookup, inventoryRender, kudJobLaunch]);
    // The KUD Job mounts the operator's key, in the functions' namespace (contract section 12).
    await createKudSshKeySecret(cluster.kubeConfig, harness.functionsNamespace);
  });

  afterAll(async () => {
    await harness?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('goes from a Provisioning to a KUD Job with the exact inventory, then to a ready cluster', async () => {
    const namespace = cluster.namespace;
    const created = await createProvisioning(cluster.kubeConfig, bareMetalProvisioning(namespace));

    const deliveries = await harness.publish(sourceEvent('add', created));
    expect(deliveries.map((d) => [d.target, d.status, d.reply?.type])).toEqual([
      ['host-lookup', 200, EventTypes.hostsResolved],
      ['inventory-render', 200, EventTypes.inventoryRendered],
      ['kud-job-launch', 200, EventTypes.kudJobLaunched],
    ]);
    const resolved = deliveries[0]?.reply;
    expect(resolved?.subject).toBe(`namespaces/${namespace}/provisionings/edge`);
    expect((resolved as unknown as { cluster: string }).cluster).toBe('edge-1');

    const expectedInventory = await golden('baremetal-hosts.ini');
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    const inventory = await core.readNamespacedConfigMap({ name: 'edge-1-inventory', namespace });
    expect(inventory.data?.['hosts.ini']).toBe(expectedInventory);
    expect(inventory.metadata?.labels).toMatchObject({ cluster: 'edge-1' });
    expect(inventory.metadata?.ownerReferences).toEqual([
      expect.objectContaining({
        kind: 'Provisioning',
        name: 'edge',
        uid: created.metadata.uid,
        controller: true,
      }),
    ]);
    expect(deliveries[1]?.reply?.data).toMatchObject({ inventorySha256: sha256Hex(expectedInventory) });

    const batch = cluster.kubeConfig.makeApiClient(BatchV1Api);
    // In the functions' namespace, tied to the Provisioning by its uid label and annotations (an
    // owner reference cannot cross namespaces).
    const fns = harness.functionsNamespace;
    const job = await batch.readNamespacedJob({ name: 'kud-edge-1', namespace: fns });
    expect(job.metadata?.labels).toEqual({
      cluster: 'edge-1',
      'app.kubernetes.io/managed-by': 'bpa-functions',
      'bpa.akraino.org/provisioning-uid': created.metadata.uid,
    });
    expect(job.metadata?.annotations).toMatchObject({
      'bpa.akraino.org/provisioning-namespace': namespace,
      'bpa.akraino.org/provisioning-name': 'edge',
    });
    expect(job.metadata?.annotations?.['bpa.akraino.org/inventory-sha256']).toBe(
      sha256Hex(expectedInventory),
    );
    expect(job.metadata?.ownerReferences).toBeUndefined();
    const container = job.spec?.template.spec?.containers[0];
    expect(container?.image).toBe(kudTestImage.succeeds);
    expect(container?.args).toEqual([kudInstallerScript('edge-1', '10.244.64.0/18', ['onap4k8s', 'emco'])]);
    expect(container?.args?.[0]).toContain(
      './installer --cluster edge-1 --network 10.244.64.0/18 --plugins onap4k8s emco',
    );
    expect(job.spec?.backoffLimit).toBe(0);
    expect(job.spec?.activeDeadlineSeconds).toBe(7200);

    let status = await readProvisioning(cluster.kubeConfig, namespace, 'edge');
    expect(status.status?.nodes).toEqual(bareMetalExpectedNodes);
    expect(status.status?.jobName).toBe('kud-edge-1');
    for (const type of ['HostsResolved', 'InventoryRendered', 'JobLaunched'])
      expect(conditionOf(status, type)).toMatchObject({ status: 'True', observedGeneration: 1 });
    expect(conditionOf(status, 'Ready')).toMatchObject({ status: 'Unknown' });

    // The Job controller's part (the pod ran the installer line above on the node), then the
    // Job ApiServerSource's update event.
    const finished = await waitForJobEnd(cluster.kubeConfig, fns, 'kud-edge-1');
    expect(finished.ended).toMatchObject({ type: 'Complete', reason: 'CompletionsReached' });
    expect(await jobPodLog(cluster.kubeConfig, fns, 'kud-edge-1')).toContain(
      'installer --cluster edge-1 --network 10.244.64.0/18 --plugins onap4k8s emco',
    );
    const completion = await harness.publish(await jobUpdateEvent(cluster.kubeConfig, fns, 'kud-edge-1'));
    expect(completion.map((d) => [d.target, d.status, d.reply?.type])).toEqual([
      ['kud-job-launch', 200, EventTypes.clusterReady],
    ]);
    expect(completion[0]?.reply?.data).toMatchObject({ cluster: 'edge-1', configMap: 'edge-1-configmap' });

    const ips = await core.readNamespacedConfigMap({ name: 'edge-1-configmap', namespace });
    expect(ips.data).toEqual({
      'MASTER_master-1': '10.10.10.11',
      'MASTER_master-2': '10.10.10.12',
      'WORKER_worker-1': '10.10.20.21',
      'WORKER_master-2': '10.10.10.12',
    });
    expect(ips.metadata?.labels).toMatchObject({ cluster: 'edge-1' });
    expect(ips.metadata?.ownerReferences?.[0]).toMatchObject({ name: 'edge', uid: created.metadata.uid });

    status = await readProvisioning(cluster.kubeConfig, namespace, 'edge');
    expect(conditionOf(status, 'KudInstalled')).toMatchObject({ status: 'True', observedGeneration: 1 });
    expect(conditionOf(status, 'Ready')).toMatchObject({ status: 'True', reason: 'ClusterReady' });

    // Every transition is also a Kubernetes Event on the Provisioning.
    const events = await core.listNamespacedEvent({ namespace });
    const reasons = events.items.filter((e) => e.involvedObject.name === 'edge').map((e) => e.reason);
    expect(reasons).toEqual(
      expect.arrayContaining(['HostsResolved', 'InventoryRendered', 'JobLaunched', 'KudInstalled']),
    );

    // The Job keeps sending updates; completion is announced once.
    const again = await harness.publish(await jobUpdateEvent(cluster.kubeConfig, fns, 'kud-edge-1'));
    expect(again.map((d) => d.status)).toEqual([204]);
  }, 240_000);
});
