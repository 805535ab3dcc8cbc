/**
 * Where the KUD Job runs (contract section 13), on the run's node (the real node: containerd,
 * kubelet) with Kubernetes' own kube-scheduler, Job controller and garbage collector: a
 * KUD_NODE_SELECTOR no node matches leaves the pod unscheduled, and the Provisioning says so
 * (status.job: Pending, the scheduler's Unschedulable and its message, tenants cannot read the
 * pod); the documented way out (set a selector the provisioning node matches, delete the pending
 * Job) launches a Job whose pod the scheduler puts on that node, with the configured tolerations,
 * and it completes. Only the scheduler decides where a pod goes here; nothing writes a pod's
 * status but it and the node.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { BatchV1Api, CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { definition as hostLookup } from '../../../functions/host-lookup/index.js';
import { definition as inventoryRender } from '../../../functions/inventory-render/index.js';
import { definition as kudJobLaunch } from '../../../functions/kud-job-launch/index.js';
import {
  createNamespace,
  deleteNamespace,
  uniqueNamespaceName,
  waitFor,
} from '../../../local/control-plane/index.js';
import { EventTypes } from '../../../shared/events/types.js';
import { useTestCluster } from '../../support/cluster.js';
import { testEnv } from '../../support/control-plane-env.js';
import {
  createKudSshKeySecret,
  describeOnNode,
  kudTestImage,
  releaseKudJob,
  waitForJobEnd,
} from '../../support/node.js';
import { ChainHarness, jobUpdateEvent, pingEvent, sourceEvent } from './support/chain-harness.js';
import {
  conditionOf,
  createBareMetalHost,
  createProvisioning,
  provisioningObject,
  readProvisioning,
} from './support/fixtures.js';

const cluster = useTestCluster({ namespacePrefix: 'kud-placement' });

describeOnNode('where the KUD Job runs', () => {
  /** KUD_NODE_SELECTOR a label no node has: the pod is never scheduled. */
  let nowhere: ChainHarness;
  /** KUD_NODE_SELECTOR the run's node's hostname label, and a toleration. */
  let placed: ChainHarness;
  let functionsNamespace = '';
  const node = () => process.env[testEnv.node] ?? '';
  const tolerations = [{ key: 'bpa.akraino.org/provisioning', operator: 'Exists', effect: 'NoSchedule' }];
  const core = () => cluster.kubeConfig.makeApiClient(CoreV1Api);
  const batch = () => cluster.kubeConfig.makeApiClient(BatchV1Api);
  const podsOf = async (uid: string | undefined) =>
    (
      await core().listNamespacedPod({
        namespace: functionsNamespace,
        labelSelector: `batch.kubernetes.io/controller-uid=${uid}`,
      })
    ).items;

  beforeAll(async () => {
    functionsNamespace = await createNamespace(cluster.kubeConfig, uniqueNamespaceName('kud-placement-fns'));
    await createBareMetalHost(cluster.kubeConfig, {
      name: 'h-1',
      namespace: cluster.namespace,
      bootMac: 'dd:00:00:00:01:01',
      nics: [{ name: 'eth0', mac: 'dd:00:00:00:01:01', ip: '10.41.0.1' }],
    });
    await createKudSshKeySecret(cluster.kubeConfig, functionsNamespace);
    const env = {
      BMH_NAMESPACE: cluster.namespace,
      IP_SOURCES: 'nics',
      SWEEP_NAMESPACES: cluster.namespace,
      FUNCTIONS_NAMESPACE: functionsNamespace,
      KUD_IMAGE: kudTestImage.waits,
    };
    nowhere = new ChainHarness(cluster.kubeConfig, {
      ...env,
      // Unique to this file, so no node of any run has it.
      KUD_NODE_SELECTOR: `bpa.akraino.org/provisioning-network=${functionsNamespace}`,
    });
    await nowhere.start([hostLookup, inventoryRender, kudJobLaunch]);
    placed = new ChainHarness(cluster.kubeConfig, {
      ...env,
      KUD_NODE_SELECTOR: `kubernetes.io/hostname=${node()}`,
      KUD_TOLERATIONS: JSON.stringify(tolerations),
    });
    await placed.start([hostLookup, inventoryRender, kudJobLaunch]);
  });
  afterAll(async () => {
    await nowhere?.stop();
    await placed?.stop();
    if (functionsNamespace) await deleteNamespace(cluster.kubeConfig, functionsNamespace);
  });

  it('a selector no node matches: the pod waits unscheduled and status.job says why; a matching one runs it on that node', async () => {
    const object = provisioningObject({
      name: 'edge',
      namespace: cluster.namespace,
      cluster: 'edge',
      masters: [{ label: 'm', mac: 'dd:00:00:00:01:01' }],
    });
    await nowhere.publish(sourceEvent('add', await createProvisioning(cluster.kubeConfig, object)));
    const first = await batch().readNamespacedJob({ name: 'kud-edge', namespace: functionsNamespace });
    expect(first.spec?.template.spec?.nodeSelector).toEqual({
      'bpa.akraino.org/provisioning-network': functionsNamespace,
    });
    // The scheduler's verdict, on the pod the Job controller made.
    const unscheduled = await waitFor(
      async () => {
        const pod = (await podsOf(first.metadata?.uid))[0];
        const scheduled = pod?.status?.conditions?.find((c) => c.type === 'PodScheduled');
        return scheduled?.status === 'False' && scheduled.reason === 'Unschedulable' ? pod : undefined;
      },
      { what: 'the pod of kud-edge marked Unschedulable', timeoutMs: 60_000, intervalMs: 250 },
    );
    expect(unscheduled.spec?.nodeName).toBeUndefined();
    // The sweep copies it to the Provisioning (tenants cannot read pods in the functions' namespace).
    expect((await nowhere.deliver('kud-job-launch', pingEvent())).status).toBe(204);
    nowhere.collector.drain();
    const waiting = await readProvisioning(cluster.kubeConfig, cluster.namespace, 'edge');
    expect((waiting.status as { job?: Record<string, unknown> }).job).toMatchObject({
      name: 'kud-edge',
      pod: unscheduled.metadata?.name,
      phase: 'Pending',
      waitingReason: 'Unschedulable',
      waitingMessage: expect.stringContaining("didn't match Pod's node affinity/selector"),
    });
    expect(conditionOf(waiting, 'Ready')).toMatchObject({ status: 'Unknown' });

    // docs/deploy.md: set a selector the provisioning node matches (the functions restarted with
    // it: the `placed` harness), then delete the pending Job; the sweep launches it again.
    await batch().deleteNamespacedJob({
      name: 'kud-edge',
      namespace: functionsNamespace,
      body: { propagationPolicy: 'Background' },
    });
    expect((await placed.deliver('kud-job-launch', pingEvent())).status).toBe(204);
    expect(placed.collector.drain().map((e) => e.type)).toEqual([EventTypes.kudJobLaunched]);
    const second = await batch().readNamespacedJob({ name: 'kud-edge', namespace: functionsNamespace });
    expect(second.metadata?.uid).not.toBe(first.metadata?.uid);
    expect(second.spec?.template.spec?.nodeSelector).toEqual({ 'kubernetes.io/hostname': node() });
    expect(second.spec?.template.spec?.tolerations).toEqual(tolerations);
    const running = await waitFor(
      async () => {
        const pod: V1Pod | undefined = (await podsOf(second.metadata?.uid))[0];
        return pod?.status?.phase === 'Running' ? pod : undefined;
      },
      { what: 'the new pod of kud-edge running', timeoutMs: 60_000, intervalMs: 250 },
    );
    expect(running.spec?.nodeName).toBe(node());
    await releaseKudJob(functionsNamespace, 'edge', 0);
    expect((await waitForJobEnd(cluster.kubeConfig, functionsNamespace, 'kud-edge')).ended).toMatchObject({
      type: 'Complete',
    });
    await placed.publish(await jobUpdateEvent(cluster.kubeConfig, functionsNamespace, 'kud-edge'));
    const done = await readProvisioning(cluster.kubeConfig, cluster.namespace, 'edge');
    expect(conditionOf(done, 'KudInstalled')).toMatchObject({ status: 'True' });
  }, 180_000);
});
