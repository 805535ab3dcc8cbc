/**
 * The KUD Job's lifecycle (contract sections 5 and 10) against the real API server: the launch
 * hash (a spec change that keeps the inventory still launches a new Job), installer settings from
 * the functions' own namespace, never adopting a Job or ConfigMap, a forged inventory.rendered,
 * a Job deleted by hand (JobMissing), a Job refused by a ValidatingAdmissionPolicy (JobRefused,
 * no loop), cancel, the deadline, the Job's progress and spec.installTimeoutSeconds.
 *
 * Imitation, said plainly: there is no Job controller or kubelet in this control plane; Job and
 * pod status are written by the test through their status subresources, as those controllers
 * would (chain-harness.ts). The ValidatingAdmissionPolicy is enforced by the real API server.
 *
 * IMITATION: no Job controller runs here; the test writes the Job's status as the real one would
 * (finishJobAsController). The real controller and node run the KUD Job in
 * test/integration/node/kud-job.test.ts; moving this suite onto them is open (issue 16).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  AdmissionregistrationV1Api,
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type V1Job,
} from '@kubernetes/client-node';
import { CloudEvent } from 'cloudevents';
import { EventTypes } from '../../../shared/events/types.js';
import { definition as hostLookup } from '../../../functions/host-lookup/index.js';
import { definition as inventoryRender } from '../../../functions/inventory-render/index.js';
import { definition as kudJobLaunch } from '../../../functions/kud-job-launch/index.js';
import { createNamespace, deleteNamespace, uniqueNamespaceName } from '../../../local/control-plane/index.js';
import { useTestCluster } from '../../support/cluster.js';
import {
  ChainHarness,
  finishJobAsController,
  jobUpdateEvent,
  pingEvent,
  sourceEvent,
} from './support/chain-harness.js';
import {
  bpaGroup,
  conditionOf,
  createBareMetalHost,
  createProvisioning,
  provisioningObject,
  readProvisioning,
} from './support/fixtures.js';

const cluster = useTestCluster();
const mac = (i: number) => `dd:00:00:00:00:${String(i).padStart(2, '0')}`;
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

describe('the KUD Job lifecycle', () => {
  let harness: ChainHarness;
  let functionsNamespace = '';
  const core = () => cluster.kubeConfig.makeApiClient(CoreV1Api);
  const batch = () => cluster.kubeConfig.makeApiClient(BatchV1Api);
  const custom = () => cluster.kubeConfig.makeApiClient(CustomObjectsApi);
  const ns = () => cluster.namespace;
  const readJob = (name: string) => batch().readNamespacedJob({ name, namespace: ns() });
  const jobsOf = async (name: string) =>
    (await batch().listNamespacedJob({ namespace: ns(), labelSelector: `cluster=${name}` })).items;
  const status = (name: string) => readProvisioning(cluster.kubeConfig, ns(), name);
  const summary = (deliveries: { target: string; status: number; reply?: { type: string } }[]) =>
    deliveries.map((d) => [d.target, d.status, d.reply?.type]);
  const start = async (
    name: string,
    i: number,
    extra: Partial<Parameters<typeof provisioningObject>[0]> = {},
    spec: Record<string, unknown> = {},
  ) => {
    const object = provisioningObject({
      name,
      namespace: ns(),
      cluster: name,
      masters: [{ label: 'm', mac: mac(i) }],
      ...extra,
    });
    const created = await createProvisioning(cluster.kubeConfig, {
      ...object,
      spec: { ...object.spec, ...spec },
    });
    const deliveries = await harness.publish(sourceEvent('add', created));
    return { created, deliveries };
  };
  const patch = (name: string, body: object) =>
    custom().patchNamespacedCustomObject(
      { ...bpaGroup, plural: 'provisionings', namespace: ns(), name, body },
      mergePatch,
    );
  /** The ping, delivered to kud-job-launch only; returns what its sweep sent. */
  const sweepKudJobLaunch = async () => {
    const delivery = await harness.deliver('kud-job-launch', pingEvent());
    expect(delivery.status).toBe(204);
    return harness.collector.drain();
  };

  beforeAll(async () => {
    functionsNamespace = await createNamespace(cluster.kubeConfig, uniqueNamespaceName('bpa-functions'));
    for (let i = 1; i <= 12; i++)
      await createBareMetalHost(cluster.kubeConfig, {
        name: `h-${i}`,
        namespace: ns(),
        bootMac: mac(i),
        nics: [{ name: 'eth0', mac: mac(i), ip: `10.40.0.${i}` }],
      });
    harness = new ChainHarness(cluster.kubeConfig, {
      BMH_NAMESPACE: ns(),
      IP_SOURCES: 'nics',
      SWEEP_NAMESPACES: ns(),
      FUNCTIONS_NAMESPACE: functionsNamespace,
    });
    await harness.start([hostLookup, inventoryRender, kudJobLaunch]);
  });
  afterAll(async () => {
    await harness?.stop();
    if (functionsNamespace) await deleteNamespace(cluster.kubeConfig, functionsNamespace);
  });

  it('launches a new Job when a spec change keeps the inventory but adds a plugin', async () => {
    await start('plugins', 1, { kudPlugins: ['multus'] });
    const first = await readJob('kud-plugins');
    await finishJobAsController(cluster.kubeConfig, ns(), 'kud-plugins', 'Complete');
    await harness.publish(await jobUpdateEvent(cluster.kubeConfig, ns(), 'kud-plugins'));
    expect(conditionOf(await status('plugins'), 'Ready')).toMatchObject({ status: 'True' });

    const changed = (await patch('plugins', { spec: { KUDPlugins: ['multus', 'istio'] } })) as Awaited<
      ReturnType<typeof status>
    >;
    expect(summary(await harness.publish(sourceEvent('update', changed)))).toEqual([
      ['host-lookup', 200, EventTypes.hostsResolved],
      ['inventory-render', 200, EventTypes.inventoryRendered],
      ['kud-job-launch', 200, EventTypes.kudJobLaunched],
    ]);
    const second = await readJob('kud-plugins');
    expect(second.metadata?.uid).not.toBe(first.metadata?.uid);
    expect(second.metadata?.annotations?.['bpa.akraino.org/inventory-sha256']).toBe(
      first.metadata?.annotations?.['bpa.akraino.org/inventory-sha256'],
    );
    expect(second.spec?.template.spec?.containers[0]?.args?.[0]).toContain('--plugins multus istio');
  });

  it('takes the installer settings from the functions’ namespace, never the Provisioning’s', async () => {
    await core().createNamespacedConfigMap({
      namespace: functionsNamespace,
      body: { metadata: { name: 'kud-installer' }, data: { HTTP_PROXY: 'http://127.0.0.1:3128' } },
    });
    await core().createNamespacedConfigMap({
      namespace: ns(),
      body: { metadata: { name: 'kud-installer' }, data: { BASH_ENV: '/tmp/evil' } },
    });
    try {
      await start('settings', 2, {}, { installTimeoutSeconds: 900 });
      const container = (await readJob('kud-settings')).spec?.template.spec?.containers[0];
      expect(container?.env).toEqual([{ name: 'HTTP_PROXY', value: 'http://127.0.0.1:3128' }]);
      expect(container?.envFrom).toBeUndefined();
      expect((await readJob('kud-settings')).spec?.activeDeadlineSeconds).toBe(900);
    } finally {
      await core().deleteNamespacedConfigMap({ name: 'kud-installer', namespace: functionsNamespace });
      await core().deleteNamespacedConfigMap({ name: 'kud-installer', namespace: ns() });
    }
  });

  it('never adopts a pre-existing Job: ObjectConflict naming it, the Job untouched', async () => {
    const foreign: V1Job = {
      metadata: { name: 'kud-foreign', namespace: ns(), labels: { cluster: 'foreign' } },
      spec: {
        template: {
          spec: { restartPolicy: 'Never', containers: [{ name: 'x', image: 'busybox', command: ['true'] }] },
        },
      },
    };
    const created = await batch().createNamespacedJob({ namespace: ns(), body: foreign });
    const { deliveries } = await start('foreign', 3);
    expect(summary(deliveries).at(-1)).toEqual(['kud-job-launch', 200, EventTypes.provisioningFailed]);
    expect(conditionOf(await status('foreign'), 'Ready')).toMatchObject({
      status: 'False',
      reason: 'ObjectConflict',
      message: expect.stringContaining(
        `Job ${ns()}/kud-foreign already exists and was not created by bpa-functions`,
      ),
    });
    const after = await readJob('kud-foreign');
    expect(after.metadata?.uid).toBe(created.metadata?.uid);
    expect(after.metadata?.resourceVersion).toBe(created.metadata?.resourceVersion);
  });

  it('never adopts a pre-existing <cluster>-configmap when the Job succeeds', async () => {
    await core().createNamespacedConfigMap({
      namespace: ns(),
      body: {
        metadata: { name: 'ipmap-configmap', labels: { cluster: 'ipmap' } },
        data: { MASTER_m: '192.0.2.1' },
      },
    });
    await start('ipmap', 4);
    await finishJobAsController(cluster.kubeConfig, ns(), 'kud-ipmap', 'Complete');
    const deliveries = await harness.publish(await jobUpdateEvent(cluster.kubeConfig, ns(), 'kud-ipmap'));
    expect(summary(deliveries)).toEqual([['kud-job-launch', 200, EventTypes.provisioningFailed]]);
    expect(conditionOf(await status('ipmap'), 'Ready')).toMatchObject({
      status: 'False',
      reason: 'ObjectConflict',
    });
    expect((await core().readNamespacedConfigMap({ name: 'ipmap-configmap', namespace: ns() })).data).toEqual(
      {
        MASTER_m: '192.0.2.1',
      },
    );
  });

  it('launches nothing for a forged inventory.rendered', async () => {
    const created = await createProvisioning(
      cluster.kubeConfig,
      provisioningObject({
        name: 'forged',
        namespace: ns(),
        cluster: 'forged',
        masters: [{ label: 'm', mac: mac(5) }],
      }),
    );
    const forged = new CloudEvent<unknown>({
      type: EventTypes.inventoryRendered,
      source: '/someone/else',
      datacontenttype: 'application/json',
      data: {
        provisioning: { namespace: ns(), name: 'forged', uid: created.metadata.uid, generation: 1 },
        cluster: 'forged',
        clusterType: 'baremetal',
        configMap: 'forged-inventory',
        inventorySha256: 'a'.repeat(64),
      },
    });
    expect(summary(await harness.publish(forged))).toEqual([['kud-job-launch', 204, undefined]]);
    expect(await jobsOf('forged')).toEqual([]);
    expect((await status('forged')).metadata.resourceVersion).toBe(created.metadata.resourceVersion);
  });

  it('notices a Job deleted by hand (JobMissing) and launches a new one', async () => {
    await start('missing', 6);
    const first = await readJob('kud-missing');
    await batch().deleteNamespacedJob({
      name: 'kud-missing',
      namespace: ns(),
      body: { propagationPolicy: 'Background' },
    });
    const sent = await sweepKudJobLaunch();
    expect(sent.map((e) => e.type)).toEqual([EventTypes.kudJobLaunched]);
    const second = await readJob('kud-missing');
    expect(second.metadata?.uid).not.toBe(first.metadata?.uid);
    const live = await status('missing');
    expect(conditionOf(live, 'KudInstalled')).toMatchObject({ status: 'False', reason: 'JobMissing' });
    expect(conditionOf(live, 'JobLaunched')).toMatchObject({ status: 'True' });
    // The new Job completes the chain as usual.
    await finishJobAsController(cluster.kubeConfig, ns(), 'kud-missing', 'Complete');
    await harness.publish(await jobUpdateEvent(cluster.kubeConfig, ns(), 'kud-missing'));
    expect(conditionOf(await status('missing'), 'KudInstalled')).toMatchObject({ status: 'True' });
  });

  it('reports a Job denied by a ValidatingAdmissionPolicy with the API server’s message, once', async () => {
    const admission = cluster.kubeConfig.makeApiClient(AdmissionregistrationV1Api);
    const policy = `deny-host-network-${ns()}`;
    await admission.createValidatingAdmissionPolicy({
      body: {
        metadata: { name: policy },
        spec: {
          failurePolicy: 'Fail',
          matchConstraints: {
            resourceRules: [
              { apiGroups: ['batch'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['jobs'] },
            ],
          },
          validations: [
            {
              expression:
                "!has(object.metadata.labels) || !('cluster' in object.metadata.labels) || object.metadata.labels['cluster'] != 'denied'",
              message: 'host-network KUD Jobs are not allowed for cluster denied',
            },
          ],
        },
      },
    });
    await admission.createValidatingAdmissionPolicyBinding({
      body: {
        metadata: { name: policy },
        spec: {
          policyName: policy,
          validationActions: ['Deny'],
          matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns() } } },
        },
      },
    });
    try {
      // The policy takes effect a moment after it is stored: wait until it denies a probe Job.
      const probe = {
        metadata: { name: 'probe', labels: { cluster: 'denied' } },
        spec: {
          template: { spec: { restartPolicy: 'Never', containers: [{ name: 'x', image: 'busybox' }] } },
        },
      };
      for (let i = 0; ; i++) {
        const denied = await batch()
          .createNamespacedJob({ namespace: ns(), body: probe, dryRun: 'All' })
          .then(
            () => false,
            () => true,
          );
        if (denied) break;
        if (i > 100) throw new Error('the ValidatingAdmissionPolicy never took effect');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const { deliveries } = await start('denied', 7);
      expect(summary(deliveries).at(-1)).toEqual(['kud-job-launch', 200, EventTypes.provisioningFailed]);
      const ready = conditionOf(await status('denied'), 'Ready');
      expect(ready).toMatchObject({ status: 'False', reason: 'JobRefused' });
      expect(ready?.message).toContain('host-network KUD Jobs are not allowed for cluster denied');
      expect(ready?.message).toContain(`ValidatingAdmissionPolicy '${policy}'`);
      // Not a loop: a redelivery is a 200 with no new announcement, the sweeps leave it alone.
      const before = (await status('denied')).metadata.resourceVersion;
      const again = await harness.publish(
        await (async () => {
          const live = await status('denied');
          return new CloudEvent<unknown>({
            type: EventTypes.inventoryRendered,
            source: '/bpa-functions/inventory-render',
            data: {
              provisioning: { namespace: ns(), name: 'denied', uid: live.metadata.uid, generation: 1 },
              cluster: 'denied',
              clusterType: 'baremetal',
              configMap: 'denied-inventory',
              inventorySha256: 'a'.repeat(64),
            },
          });
        })(),
      );
      expect(summary(again)).toEqual([['kud-job-launch', 204, undefined]]);
      expect(summary(await harness.publish(pingEvent())).every(([, code]) => code === 204)).toBe(true);
      expect(harness.collector.drain().filter((e) => (e.subject ?? '').endsWith('/denied'))).toEqual([]);
      expect((await status('denied')).metadata.resourceVersion).toBe(before);
      expect(await jobsOf('denied')).toEqual([]);
    } finally {
      await admission.deleteValidatingAdmissionPolicyBinding({ name: policy });
      await admission.deleteValidatingAdmissionPolicy({ name: policy });
    }
  });

  it('cancels a running Job on bpa.akraino.org/cancel: "true"', async () => {
    await start('cancel', 8);
    await patch('cancel', { metadata: { annotations: { 'bpa.akraino.org/cancel': 'true' } } });
    const sent = await sweepKudJobLaunch();
    expect(sent.map((e) => e.type)).toEqual([EventTypes.provisioningFailed]);
    expect(conditionOf(await status('cancel'), 'Ready')).toMatchObject({
      status: 'False',
      reason: 'Cancelled',
    });
    const job = await batch()
      .readNamespacedJob({ name: 'kud-cancel', namespace: ns() })
      .catch(() => undefined);
    // Deleted (background propagation: gone, or going with a deletionTimestamp).
    expect(job === undefined || job.metadata?.deletionTimestamp !== undefined).toBe(true);
  });

  it('says JobDeadlineExceeded when the Job ran past its deadline', async () => {
    await start('slow', 9);
    const job = await readJob('kud-slow');
    const now = new Date();
    await batch().replaceNamespacedJobStatus({
      name: 'kud-slow',
      namespace: ns(),
      body: {
        ...job,
        status: {
          startTime: new Date(now.getTime() - 7_300_000),
          failed: 1,
          conditions: [
            {
              type: 'FailureTarget',
              status: 'True',
              reason: 'DeadlineExceeded',
              message: 'Job was active longer than specified deadline',
              lastTransitionTime: now,
              lastProbeTime: now,
            },
            {
              type: 'Failed',
              status: 'True',
              reason: 'DeadlineExceeded',
              message: 'Job was active longer than specified deadline',
              lastTransitionTime: now,
              lastProbeTime: now,
            },
          ],
        },
      },
    });
    await harness.publish(await jobUpdateEvent(cluster.kubeConfig, ns(), 'kud-slow'));
    expect(conditionOf(await status('slow'), 'Ready')).toMatchObject({
      status: 'False',
      reason: 'JobDeadlineExceeded',
      message: expect.stringContaining('exceeded its deadline of 7200 s, KUD not installed in Cluster slow'),
    });
  });

  it('shows the running Job’s pod, why it waits and the time left', async () => {
    await start('progress', 10);
    const job = await readJob('kud-progress');
    await batch().replaceNamespacedJobStatus({
      name: 'kud-progress',
      namespace: ns(),
      body: { ...job, status: { startTime: new Date(Date.now() - 100_000), active: 1 } },
    });
    const pod = await core().createNamespacedPod({
      namespace: ns(),
      body: {
        metadata: {
          name: 'kud-progress-abcde',
          labels: { 'job-name': 'kud-progress', 'batch.kubernetes.io/job-name': 'kud-progress' },
        },
        spec: {
          restartPolicy: 'Never',
          automountServiceAccountToken: false,
          containers: [{ name: 'kud', image: 'kud' }],
        },
      },
    });
    await core().replaceNamespacedPodStatus({
      name: 'kud-progress-abcde',
      namespace: ns(),
      body: {
        ...pod,
        status: {
          phase: 'Pending',
          containerStatuses: [
            {
              name: 'kud',
              image: 'kud',
              imageID: '',
              ready: false,
              restartCount: 0,
              state: {
                waiting: {
                  reason: 'CreateContainerConfigError',
                  message: 'secret "ssh-key-secret" not found',
                },
              },
            },
          ],
        },
      },
    });
    await sweepKudJobLaunch();
    const progress = (await status('progress')).status as { job?: Record<string, unknown> };
    expect(progress.job).toMatchObject({
      name: 'kud-progress',
      pod: 'kud-progress-abcde',
      phase: 'Pending',
      waitingReason: 'CreateContainerConfigError',
      waitingMessage: 'secret "ssh-key-secret" not found',
    });
    expect(progress.job?.secondsLeft).toBeGreaterThan(7000);
    expect(progress.job?.secondsLeft).toBeLessThanOrEqual(7100);
  });
});
