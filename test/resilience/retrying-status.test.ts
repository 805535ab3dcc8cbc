/**
 * API fault: a step that fails transiently answers 5xx (the broker retries) and, before that,
 * records on the Provisioning's status what is failing (`<step>=Unknown` with the fault's
 * reason), so a user sees it even when the broker gives up. Shown for inventory-render (its
 * ConfigMap writes answer 500), kud-job-launch (its Job creates answer 500) and software-install
 * (its SSH key Secret reads answer 500), and host-lookup refused by RBAC (its VM pod list answers
 * 403: an API refusal is retried too, so a Role added later is picked up); host-lookup's 5xx
 * case is in dead-letter.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { CloudEvent } from 'cloudevents';
import { definition as hostLookup } from '../../functions/host-lookup/index.js';
import { definition as inventoryRender } from '../../functions/inventory-render/index.js';
import { definition as kudJobLaunch } from '../../functions/kud-job-launch/index.js';
import { definition as softwareInstall } from '../../functions/software-install/index.js';
import { postEvent } from '../../shared/cloudevents/sink-client.js';
import { renderHostsIni } from '../../shared/core/inventory.js';
import { sha256Hex } from '../../shared/core/hash.js';
import { EventTypes } from '../../shared/events/types.js';
import { silentLogger } from '../../shared/log.js';
import type { FunctionDefinition } from '../../shared/server/types.js';
import { startFunctionServer, type RunningFunctionServer } from '../../shared/server/function-server.js';
import { useTestCluster } from '../support/cluster.js';
import { startApiProxy, type ApiProxy } from '../support/faults/api-proxy.js';
import { sourceEvent } from '../integration/functions/support/chain-harness.js';
import {
  bpaGroup,
  conditionOf,
  createProvisioning,
  managedFor,
  readProvisioning,
  writeProvisioningStatus,
  createReadyProvisioning,
} from '../integration/functions/support/fixtures.js';
import { clusterProvisioning, createSoftware, nodeMac } from './support/lab-cluster.js';

const cluster = useTestCluster();

describe('a fault answered 5xx is on status before the answer', () => {
  let proxy: ApiProxy;
  const servers: RunningFunctionServer[] = [];
  const serve = async <Config>(definition: FunctionDefinition<Config>, env: Record<string, string> = {}) => {
    const server = await startFunctionServer({
      definition,
      host: '127.0.0.1',
      port: 0,
      kubeConfig: proxy.kubeConfig,
      env: { SWEEP_NAMESPACES: cluster.namespace, ...env },
      log: silentLogger,
      tracing: false,
      processMetrics: false,
    });
    servers.push(server);
    return server;
  };

  beforeAll(async () => {
    proxy = await startApiProxy(cluster.kubeConfig);
    proxy.failNext((r) => r.method === 'POST' && r.url.includes('/configmaps'), 500, Infinity);
    proxy.failNext((r) => r.method === 'POST' && r.url.includes('/jobs'), 500, Infinity);
    proxy.failNext((r) => r.method === 'GET' && r.url.includes('/secrets/'), 500, Infinity);
  });

  afterAll(async () => {
    for (const server of servers) await server.close();
    await proxy?.close();
  });

  const refOf = (stored: {
    metadata: { namespace: string; name: string; uid: string; generation: number };
  }) => ({
    namespace: stored.metadata.namespace,
    name: stored.metadata.name,
    uid: stored.metadata.uid,
    generation: stored.metadata.generation,
  });

  it('inventory-render: ConfigMap writes failing → 503 and InventoryRendered=Unknown with the reason', async () => {
    const server = await serve(inventoryRender);
    const stored = await createProvisioning(
      cluster.kubeConfig,
      clusterProvisioning(cluster.namespace, 71, 'flaky-cm', 1, 0),
    );
    // Events are pointers: inventory-render renders the nodes host-lookup recorded.
    await writeProvisioningStatus(cluster.kubeConfig, cluster.namespace, 'flaky-cm', {
      conditions: [
        { type: 'HostsResolved', status: 'True', reason: 'HostsResolved', message: 'Resolved 1 node' },
      ],
      nodes: [
        {
          label: 'master-0',
          roles: ['master', 'worker'],
          mac: nodeMac(71, 0),
          ip: '10.0.0.71',
          source: 'host-nics',
        },
      ],
    });
    const event = new CloudEvent<unknown>({
      type: EventTypes.hostsResolved,
      source: '/test',
      subject: `namespaces/${cluster.namespace}/provisionings/flaky-cm`,
      data: {
        provisioning: refOf(stored),
        cluster: 'flaky-cm',
        clusterType: 'baremetal',
        nodes: [
          {
            label: 'master-0',
            roles: ['master', 'worker'],
            mac: nodeMac(71, 0),
            ip: '10.0.0.71',
            source: 'host-nics',
          },
        ],
      },
    });
    const response = await postEvent(server.url, event);
    expect(response.status).toBe(503);
    const condition = conditionOf(
      await readProvisioning(cluster.kubeConfig, cluster.namespace, 'flaky-cm'),
      'InventoryRendered',
    );
    expect(condition).toEqual(
      expect.objectContaining({
        status: 'Unknown',
        reason: expect.stringMatching(/^Kubernetes[A-Z]\w+$/),
        observedGeneration: stored.metadata.generation,
      }),
    );
    expect(condition?.message).toMatch(/\(will be retried\)$/);
  });

  it('kud-job-launch: Job creates failing → 503 and JobLaunched=Unknown with the reason', async () => {
    const server = await serve(kudJobLaunch);
    const stored = await createProvisioning(
      cluster.kubeConfig,
      clusterProvisioning(cluster.namespace, 72, 'flaky-job', 1, 0),
    );
    const inventory = renderHostsIni({
      clusterType: 'baremetal',
      nodes: [
        {
          label: 'master-0',
          roles: ['master', 'worker'],
          mac: nodeMac(72, 0),
          ip: '10.0.0.72',
          source: 'host-nics',
        },
      ],
      workerOrder: ['master-0'],
    });
    // What inventory-render would have left: its ConfigMap (written directly: the proxy refuses
    // it) and InventoryRendered True; kud-job-launch reads both, never the event's data.
    await cluster.kubeConfig.makeApiClient(CoreV1Api).createNamespacedConfigMap({
      namespace: cluster.namespace,
      body: {
        metadata: { name: 'flaky-job-inventory', ...managedFor(stored, 'flaky-job') },
        data: { 'hosts.ini': inventory },
      },
    });
    await writeProvisioningStatus(cluster.kubeConfig, cluster.namespace, 'flaky-job', {
      conditions: [
        { type: 'HostsResolved', status: 'True', reason: 'HostsResolved', message: 'Resolved 1 node' },
        { type: 'InventoryRendered', status: 'True', reason: 'InventoryRendered', message: 'rendered' },
      ],
      nodes: [
        {
          label: 'master-0',
          roles: ['master', 'worker'],
          mac: nodeMac(72, 0),
          ip: '10.0.0.72',
          source: 'host-nics',
        },
      ],
    });
    const event = new CloudEvent<unknown>({
      type: EventTypes.inventoryRendered,
      source: '/test',
      subject: `namespaces/${cluster.namespace}/provisionings/flaky-job`,
      data: {
        provisioning: refOf(stored),
        cluster: 'flaky-job',
        clusterType: 'baremetal',
        configMap: 'flaky-job-inventory',
        inventorySha256: sha256Hex(inventory),
      },
    });
    const response = await postEvent(server.url, event);
    expect(response.status).toBe(503);
    const condition = conditionOf(
      await readProvisioning(cluster.kubeConfig, cluster.namespace, 'flaky-job'),
      'JobLaunched',
    );
    expect(condition).toEqual(
      expect.objectContaining({ status: 'Unknown', observedGeneration: stored.metadata.generation }),
    );
    expect(condition?.message).toMatch(/\(will be retried\)$/);
  });

  it('software-install: SSH key Secret reads failing → 503 and Installed=Unknown with the reason', async () => {
    const server = await serve(softwareInstall);
    const namespace = cluster.namespace;
    // The cluster is ready (its Provisioning Ready for its generation, its ConfigMap exists), so
    // the install goes on to read the SSH key.
    await createReadyProvisioning(cluster.kubeConfig, namespace, 'flaky-sw');
    await cluster.kubeConfig.makeApiClient(CoreV1Api).createNamespacedConfigMap({
      namespace,
      body: {
        metadata: { name: 'flaky-sw-configmap', labels: { cluster: 'flaky-sw' } },
        data: { MASTER_m: '10.0.0.73' },
      },
    });
    const stored = await createSoftware(cluster.kubeConfig, namespace, 'flaky-sw', 'flaky-sw', {
      masterSoftware: ['htop'],
    });
    const response = await postEvent(server.url, sourceEvent('add', stored));
    expect(response.status).toBe(503);
    const read = (await cluster.kubeConfig.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
      ...bpaGroup,
      plural: 'softwares',
      namespace,
      name: 'flaky-sw',
    })) as {
      status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
    };
    const condition = read.status?.conditions?.find((c) => c.type === 'Installed');
    expect(condition).toEqual(
      expect.objectContaining({
        status: 'Unknown',
        reason: expect.stringMatching(/^Kubernetes[A-Z]\w+$/),
        observedGeneration: stored.metadata.generation,
      }),
    );
    expect(condition?.message).toMatch(/\(will be retried\)$/);
  });

  it('host-lookup: VM pods refused (403: the VM namespace lacks its Role) → 500 and HostsResolved=Unknown KubernetesForbidden', async () => {
    const namespace = cluster.namespace;
    // What the API server answers a ServiceAccount without docs/deploy.md's VM namespace Role.
    proxy.failNext(
      (r) => r.method === 'GET' && r.url.includes(`/namespaces/${namespace}/pods`),
      403,
      Infinity,
    );
    const server = await serve(hostLookup, { VM_NAMESPACES: namespace, BMH_NAMESPACE: namespace });
    const stored = await createProvisioning(cluster.kubeConfig, {
      ...clusterProvisioning(namespace, 74, 'refused-vms', 1, 0),
      metadata: {
        name: 'refused-vms',
        namespace,
        labels: { cluster: 'refused-vms', 'cluster-type': 'virtlet-vm' },
      },
    });
    const response = await postEvent(server.url, sourceEvent('add', stored));
    // A refusal is retried (the operator may add the Role), and the status says why meanwhile.
    expect(response.status).toBe(500);
    const condition = conditionOf(
      await readProvisioning(cluster.kubeConfig, namespace, 'refused-vms'),
      'HostsResolved',
    );
    expect(condition).toEqual(
      expect.objectContaining({
        status: 'Unknown',
        reason: 'KubernetesForbidden',
        observedGeneration: stored.metadata.generation,
      }),
    );
    expect(condition?.message).toMatch(/^Kubernetes API refused to .*pods.*\(will be retried\)$/);
  });
});
