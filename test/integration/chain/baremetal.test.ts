/**
 * The successful chain variants, on both engines (test/support/chain-engine.ts), driven only
 * through the API server: a bare-metal cluster (hosts from an ISC lease file and inspected NICs),
 * a masters-only cluster and a Virtlet VM cluster each go from a Provisioning applied with kubectl
 * to the exact hosts.ini (test/golden/functions/), the KUD Job, and, once the Job's installer
 * ends, KudInstalled and Ready True, the `<cluster>-configmap` of node IPs and one cluster.ready
 * CloudEvent through the Broker (a recorder Trigger, as any consumer of the chain would subscribe).
 *
 * Real: kube-apiserver, etcd, the Job controller that ends the KUD Job, the node that runs its pod
 * from an image (a real kubelet and containerd, local/kubelet-node), the engine's ApiServerSources
 * that turn every write into the chain's events, the Broker and the manifests' Triggers (on
 * `knative`: Knative Eventing's own; test/support/chain-engine.ts says what runs where),
 * host-lookup's RBAC (on both engines it runs as its ServiceAccount).
 * IMITATION: the KUD installer is the test image bpa.local/test/kud-waits:1
 * (test/fixtures/node/kud-installers/waits), which exits with the code the suite releases it with;
 * the hosts are BareMetalHosts with inspected NICs and an ISC lease file written by the suite (no
 * hardware, no dhcpd); the Virtlet VM pods are written by the suite, status included, with a
 * scheduler name that does not exist (no Virtlet here; test/support/vm-namespace.ts).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from '@jest/globals';
import { BatchV1Api, CoreV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { waitFor } from '../../../local/control-plane/wait.js';
import { decodeHttpEvent, type RawEvent } from '../../../shared/cloudevents/http-codec.js';
import { sha256Hex } from '../../../shared/core/hash.js';
import { kudInstallerScript } from '../../../shared/core/kud-job.js';
import {
  EventTypes,
  SourceEventTypes,
  eventSource,
  provisioningSubject,
} from '../../../shared/events/types.js';
import { describeOnEngines, useChainEngine, type ChainEngine } from '../../support/chain-engine.js';
import { startRecorder, type Recorder } from '../../support/knative-objects.js';
import { createKudSshKeySecret, jobPodLog, kudTestImage } from '../../support/node.js';
import { createVmNamespaceRbac, createVirtletScenarioPods } from '../../support/vm-namespace.js';
import {
  conditionOf,
  createBareMetalHost,
  provisioningObject,
  readProvisioning,
} from '../functions/support/fixtures.js';
import {
  bareMetalExpectedNodes,
  bareMetalLeaseFile,
  bareMetalProvisioning,
  createBareMetalScenarioHosts,
} from '../functions/support/baremetal-scenario.js';

const golden = (name: string) => readFile(new URL(`../../golden/functions/${name}`, import.meta.url), 'utf8');

/** The recorder Trigger: every cluster.ready the chain announces, as a consumer subscribes to it. */
const recorderTrigger = (recorder: Recorder): KubernetesObject =>
  ({
    apiVersion: 'eventing.knative.dev/v1',
    kind: 'Trigger',
    metadata: { name: 'chain-baremetal-cluster-ready' },
    spec: {
      broker: 'default',
      filter: { attributes: { type: EventTypes.clusterReady } },
      // The pod IP: both engines reach it (a ref to a core Service would not resolve on embedded).
      subscriber: { uri: `${recorder.baseUrl}ok` },
    },
  }) as KubernetesObject;

describeOnEngines('successful chain variants', (engine) => {
  let recorder: Recorder | undefined;
  const chain: ChainEngine = useChainEngine(engine, {
    namespacePrefix: 'chain-ok',
    prepare: async ({ kubeConfig, namespace, functionsNamespace, observerNamespace, workDir }) => {
      // The KUD Job runs in the functions' namespace and mounts the operator's key there.
      await createKudSshKeySecret(kubeConfig, functionsNamespace);
      await writeFile(join(workDir, 'dhcpd.leases'), bareMetalLeaseFile);
      // Bare metal (chain-baremetal.test.ts's hosts).
      await createBareMetalScenarioHosts(kubeConfig, namespace);
      // Masters only: no lease, the IPs are on the NICs.
      for (const octet of [1, 2])
        await createBareMetalHost(kubeConfig, {
          name: `solo-${octet}`,
          namespace,
          bootMac: `aa:bb:cc:00:03:0${octet}`,
          nics: [{ name: 'eth0', mac: `aa:bb:cc:00:03:0${octet}`, ip: `10.10.30.${octet}` }],
        });
      // The suite's namespace is also its VM namespace (docs/deploy.md "Hosts and VM namespaces").
      await createVmNamespaceRbac(kubeConfig, namespace);
      // Not in the tenant's namespace: the recorder's pod meets no Pod Security level.
      recorder = await startRecorder(kubeConfig, observerNamespace);
    },
    config: ({ namespace, workDir }) => ({
      BMH_NAMESPACE: namespace,
      VM_NAMESPACES: namespace,
      LEASES_SOURCE: join(workDir, 'dhcpd.leases'),
      IP_SOURCES: 'leases,nics',
      KUD_IMAGE: kudTestImage.waits,
      SWEEP_NAMESPACES: namespace,
    }),
    extraObjects: () => {
      if (!recorder) throw new Error('the recorder starts in prepare');
      return [recorderTrigger(recorder)];
    },
  });
  const core = () => chain.kubeConfig.makeApiClient(CoreV1Api);
  const batch = () => chain.kubeConfig.makeApiClient(BatchV1Api);
  // Server-side: a client-side apply drops the null of `- master-2:` (a master that is also a
  // worker, as the contract writes it), and the CRD refuses the empty entry that is left.
  const apply = async (object: ReturnType<typeof provisioningObject>) => {
    await chain.kubectl(['apply', '--server-side', '-f', '-'], JSON.stringify(object));
    return readProvisioning(chain.kubeConfig, chain.namespace, object.metadata.name);
  };
  /** The cluster.ready events the recorder got for Provisioning `name`, decoded. */
  const clusterReadyEvents = async (name: string): Promise<RawEvent[]> => {
    if (!recorder) throw new Error('no recorder');
    return (await recorder.received())
      .map((r) => decodeHttpEvent(r.headers, Buffer.from(r.body, 'utf8')))
      .filter((e) => e.attributes['subject'] === provisioningSubject(chain.namespace, name));
  };
  const waitForClusterReady = (name: string) =>
    waitFor(
      async () => {
        const [first] = await clusterReadyEvents(name);
        return first;
      },
      { what: `cluster.ready of ${name} at the recorder`, timeoutMs: 60_000, intervalMs: 500 },
    );
  const dataOf = (event: RawEvent): unknown => JSON.parse(event.data?.toString('utf8') ?? 'null');

  it('bare metal: leases and NICs to the exact hosts.ini, the KUD Job, then Ready and cluster.ready', async () => {
    const { namespace } = chain;
    const created = await apply(bareMetalProvisioning(namespace));
    const launched = await chain.waitForCondition('edge', 'JobLaunched', 'True', 180_000);

    const expectedInventory = await golden('baremetal-hosts.ini');
    const inventory = await core().readNamespacedConfigMap({ name: 'edge-1-inventory', namespace });
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

    // The Job runs in the functions' namespace, tied to its Provisioning by uid (an owner
    // reference cannot cross namespaces): docs/adr/0013-tenancy.md.
    const functionsNamespace = chain.functionsNamespace;
    const job = await batch().readNamespacedJob({ name: 'kud-edge-1', namespace: functionsNamespace });
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
    expect(job.metadata?.annotations?.['bpa.akraino.org/provisioning-generation']).toBe('1');
    expect(job.metadata?.ownerReferences).toBeUndefined();
    // The mounted inventory: rendered again from status.nodes in the functions' namespace.
    const mounted = await core().readNamespacedConfigMap({
      name: 'edge-1-inventory',
      namespace: functionsNamespace,
    });
    expect(mounted.data?.['hosts.ini']).toBe(expectedInventory);
    const container = job.spec?.template.spec?.containers[0];
    expect(container?.image).toBe(kudTestImage.waits);
    expect(container?.args).toEqual([kudInstallerScript('edge-1', '10.244.64.0/18', ['onap4k8s', 'emco'])]);
    expect(container?.args?.[0]).toContain(
      './installer --cluster edge-1 --network 10.244.64.0/18 --plugins onap4k8s emco',
    );
    expect(job.spec?.backoffLimit).toBe(0);
    expect(job.spec?.activeDeadlineSeconds).toBe(7200);

    expect(launched.status?.nodes).toEqual(bareMetalExpectedNodes);
    expect(launched.status?.jobName).toBe('kud-edge-1');
    for (const type of ['HostsResolved', 'InventoryRendered', 'JobLaunched'])
      expect([type, conditionOf(launched, type)]).toEqual([
        type,
        expect.objectContaining({ status: 'True', observedGeneration: 1 }),
      ]);
    // The installer waits for its release: nothing is announced before the Job ends.
    expect(conditionOf(launched, 'Ready')).toMatchObject({ status: 'Unknown' });
    expect(await clusterReadyEvents('edge')).toEqual([]);

    await chain.releaseKudJob('edge-1', 0);
    const ready = await chain.waitForCondition('edge', 'Ready', 'True', 180_000);
    expect(conditionOf(ready, 'Ready')).toMatchObject({ reason: 'ClusterReady', observedGeneration: 1 });
    expect(conditionOf(ready, 'KudInstalled')).toMatchObject({ status: 'True', observedGeneration: 1 });
    // The Job controller ended the Job; its pod ran the installer line above.
    const finished = await batch().readNamespacedJob({ name: 'kud-edge-1', namespace: functionsNamespace });
    expect(finished.status?.conditions?.find((c) => c.type === 'Complete')).toMatchObject({
      status: 'True',
      reason: 'CompletionsReached',
    });
    expect(await jobPodLog(chain.kubeConfig, functionsNamespace, 'kud-edge-1')).toContain(
      'installer --cluster edge-1 --network 10.244.64.0/18 --plugins onap4k8s emco',
    );

    const ips = await core().readNamespacedConfigMap({ name: 'edge-1-configmap', namespace });
    expect(ips.data).toEqual({
      'MASTER_master-1': '10.10.10.11',
      'MASTER_master-2': '10.10.10.12',
      'WORKER_worker-1': '10.10.20.21',
      'WORKER_master-2': '10.10.10.12',
    });
    expect(ips.metadata?.labels).toMatchObject({ cluster: 'edge-1' });
    expect(ips.metadata?.ownerReferences?.[0]).toMatchObject({ name: 'edge', uid: created.metadata.uid });
    expect(ready.status?.nodes?.map((n) => [n.label, n.ip, n.source])).toEqual([
      ['master-1', '10.10.10.11', 'dhcp-leases'],
      ['master-2', '10.10.10.12', 'dhcp-leases'],
      ['worker-1', '10.10.20.21', 'host-nics'],
    ]);

    // Every transition is also a Kubernetes Event on the Provisioning, written after its
    // condition (shared/k8s/step-report.ts): KudInstalled's may follow Ready True by a moment.
    const steps = ['HostsResolved', 'InventoryRendered', 'JobLaunched', 'KudInstalled'];
    const eventsOfEdge = async () =>
      (await core().listNamespacedEvent({ namespace })).items.filter((e) => e.involvedObject.name === 'edge');
    await waitFor(
      async () => {
        const found = (await eventsOfEdge()).filter((e) => e.type === 'Normal').map((e) => e.reason);
        return steps.every((step) => found.includes(step)) ? true : undefined;
      },
      { what: 'the Events of every step of edge', timeoutMs: 30_000, intervalMs: 500 },
    );
    // A chain that went through without a fault warns about nothing.
    // Reason and message: a failure then says which step warned and why.
    expect(
      (await eventsOfEdge()).filter((e) => e.type !== 'Normal').map((e) => `${e.reason}: ${e.message}`),
    ).toEqual([]);

    // cluster.ready through the Broker: a pointer to the Provisioning, never a fact to act on.
    const announced = await waitForClusterReady('edge');
    expect(announced.attributes).toMatchObject({
      type: EventTypes.clusterReady,
      source: eventSource('kud-job-launch'),
      subject: provisioningSubject(namespace, 'edge'),
    });
    expect(dataOf(announced)).toMatchObject({
      provisioning: { namespace, name: 'edge', uid: created.metadata.uid, generation: 1 },
      cluster: 'edge-1',
      configMap: 'edge-1-configmap',
    });
  }, 420_000);

  it('masters only: every master also a worker, in hosts.ini and in the IP ConfigMap', async () => {
    const { namespace } = chain;
    const created = await apply(
      provisioningObject({
        name: 'solo',
        namespace,
        cluster: 'solo',
        masters: [
          { label: 'solo-1', mac: 'aa:bb:cc:00:03:01' },
          { label: 'solo-2', mac: 'aa:bb:cc:00:03:02' },
        ],
      }),
    );
    const launched = await chain.waitForCondition('solo', 'JobLaunched', 'True', 180_000);
    const inventory = await core().readNamespacedConfigMap({ name: 'solo-inventory', namespace });
    expect(inventory.data?.['hosts.ini']).toBe(await golden('masters-only-hosts.ini'));
    expect(launched.status?.nodes?.map((n) => [n.label, n.roles, n.ip, n.source])).toEqual([
      ['solo-1', ['master', 'worker'], '10.10.30.1', 'host-nics'],
      ['solo-2', ['master', 'worker'], '10.10.30.2', 'host-nics'],
    ]);

    await chain.releaseKudJob('solo', 0);
    const ready = await chain.waitForCondition('solo', 'Ready', 'True', 180_000);
    expect(conditionOf(ready, 'KudInstalled')).toMatchObject({ status: 'True', observedGeneration: 1 });
    const ips = await core().readNamespacedConfigMap({ name: 'solo-configmap', namespace });
    expect(ips.data).toEqual({
      'MASTER_solo-1': '10.10.30.1',
      'MASTER_solo-2': '10.10.30.2',
      'WORKER_solo-1': '10.10.30.1',
      'WORKER_solo-2': '10.10.30.2',
    });
    expect(dataOf(await waitForClusterReady('solo'))).toMatchObject({
      provisioning: { namespace, name: 'solo', uid: created.metadata.uid, generation: 1 },
      cluster: 'solo',
      configMap: 'solo-configmap',
    });
  }, 420_000);

  it('a Virtlet VM cluster from its running VM pods (cluster-type virtlet-vm)', async () => {
    const { namespace } = chain;
    await createVirtletScenarioPods(chain.kubeConfig, namespace);
    const created = await apply(
      provisioningObject({
        name: 'vms',
        namespace,
        cluster: 'vm-cluster',
        clusterType: 'virtlet-vm',
        masters: [{ label: 'vm-master', mac: 'de:ad:00:00:00:01' }],
        workers: [{ label: 'vm-worker', mac: 'de:ad:00:00:00:02' }],
      }),
    );
    const launched = await chain.waitForCondition('vms', 'JobLaunched', 'True', 180_000);
    const inventory = await core().readNamespacedConfigMap({ name: 'vm-cluster-inventory', namespace });
    expect(inventory.data?.['hosts.ini']).toBe(await golden('virtlet-hosts.ini'));
    expect(launched.status?.nodes?.map((n) => [n.label, n.ip, n.source])).toEqual([
      ['vm-master', '10.244.1.5', 'virtlet-pod'],
      ['vm-worker', '172.16.0.9', 'virtlet-pod'],
    ]);
    const job = await batch().readNamespacedJob({
      name: 'kud-vm-cluster',
      namespace: chain.functionsNamespace,
    });
    expect(job.spec?.template.spec?.containers[0]?.image).toBe(kudTestImage.waits);

    await chain.releaseKudJob('vm-cluster', 0);
    await chain.waitForCondition('vms', 'Ready', 'True', 180_000);
    const ips = await core().readNamespacedConfigMap({ name: 'vm-cluster-configmap', namespace });
    expect(ips.data).toEqual({ 'MASTER_vm-master': '10.244.1.5', 'WORKER_vm-worker': '172.16.0.9' });
    expect(dataOf(await waitForClusterReady('vms'))).toMatchObject({
      provisioning: { namespace, name: 'vms', uid: created.metadata.uid, generation: 1 },
      cluster: 'vm-cluster',
      configMap: 'vm-cluster-configmap',
    });
  }, 420_000);

  it('each cluster is announced once, whatever Job updates and sweeps came after', async () => {
    // Let one sweep of kud-job-launch run after all three are Ready (the manifests' PingSource,
    // once a minute): a sweep that re-announced a finished Job would show here.
    const sweeps = async () =>
      (await chain.functionLog('kud-job-launch')).filter(
        (l) => l.msg === 'event' && l.ce_type === SourceEventTypes.ping,
      ).length;
    const before = await sweeps();
    await waitFor(async () => ((await sweeps()) > before ? true : undefined), {
      what: 'one more sweep of kud-job-launch',
      timeoutMs: 150_000,
      intervalMs: 2000,
    });
    for (const name of ['edge', 'solo', 'vms'])
      expect([name, (await clusterReadyEvents(name)).length]).toEqual([name, 1]);
  }, 180_000);
});
