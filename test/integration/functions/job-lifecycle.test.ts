/**
 * The KUD Job's lifecycle (contract sections 5, 10 and 12) against the real API server, the Job in
 * the functions' namespace (never the Provisioning's): the launch
 * hash (a spec change that keeps the inventory still launches a new Job), installer settings from
 * the functions' own namespace, never adopting a Job or ConfigMap, a forged inventory.rendered,
 * a Job deleted by hand (JobMissing), a Job refused by a ValidatingAdmissionPolicy (JobRefused,
 * no loop), cancel, the deadline, the Job's progress and spec.installTimeoutSeconds.
 *
 * The KUD Jobs run on the run's node (the real node: containerd, kubelet) and Kubernetes' own
 * Job controller and garbage collector decide their status: their image's installer (kud-waits,
 * test/fixtures/node/kud-installers) exits with the code the test releases it with, the deadline
 * is a real activeDeadlineSeconds, and the waiting pod is one whose image the node does not hold
 * (the kubelet's pull fails: nothing leaves the machine). Nothing writes a Job's or a pod's status
 * but those. The ValidatingAdmissionPolicy is enforced by the real API server.
 *
 * The waiting pod was one whose SSH key Secret is missing while the node was our imitation, which
 * put `secret "..." not found` in the container's waiting message. A real kubelet leaves that
 * pod's container waiting in ContainerCreating with no message (the why is only a FailedMount
 * Event), so a missing image, whose ErrImagePull / ImagePullBackOff carries a message, shows the
 * relayed reason and message instead.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
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
import { pastOwnershipGrace } from '../../support/ownership.js';
import {
  createKudSshKeySecret,
  describeOnNode,
  kudTestImage,
  releaseKudJob,
  waitForJobEnd,
  waitForPodsGone,
} from '../../support/node.js';
import { waitFor } from '../../../local/control-plane/index.js';
import { ChainHarness, jobUpdateEvent, pingEvent, sourceEvent } from './support/chain-harness.js';
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

/** An image no node of the run holds (no registry answers for bpa.local). */
const absentImage = 'bpa.local/test/not-on-this-node:1';

describeOnNode('the KUD Job lifecycle', () => {
  let harness: ChainHarness;
  /** The same functions, with an SSH key Secret that does not exist: the KUD pod waits. */
  let noImageHarness: ChainHarness;
  let functionsNamespace = '';
  const core = () => cluster.kubeConfig.makeApiClient(CoreV1Api);
  const batch = () => cluster.kubeConfig.makeApiClient(BatchV1Api);
  const custom = () => cluster.kubeConfig.makeApiClient(CustomObjectsApi);
  const ns = () => cluster.namespace;
  /** The functions' namespace: the Jobs, their pods and what they mount live there. */
  const fns = () => functionsNamespace;
  const readJob = (name: string) => batch().readNamespacedJob({ name, namespace: fns() });
  const jobsOf = async (name: string) => [
    ...(await batch().listNamespacedJob({ namespace: fns(), labelSelector: `cluster=${name}` })).items,
    ...(await batch().listNamespacedJob({ namespace: ns(), labelSelector: `cluster=${name}` })).items,
  ];
  const status = (name: string) => readProvisioning(cluster.kubeConfig, ns(), name);
  const summary = (deliveries: { target: string; status: number; reply?: { type: string } }[]) =>
    deliveries.map((d) => [d.target, d.status, d.reply?.type]);
  const start = async (
    name: string,
    i: number,
    extra: Partial<Parameters<typeof provisioningObject>[0]> = {},
    spec: Record<string, unknown> = {},
    through: ChainHarness = harness,
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
    const deliveries = await through.publish(sourceEvent('add', created));
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
    // The operator's key, in the functions' namespace: a tenant's Secrets are never mounted.
    await createKudSshKeySecret(cluster.kubeConfig, functionsNamespace);
    const env = {
      BMH_NAMESPACE: ns(),
      IP_SOURCES: 'nics',
      SWEEP_NAMESPACES: ns(),
      FUNCTIONS_NAMESPACE: functionsNamespace,
      KUD_IMAGE: kudTestImage.waits,
    };
    harness = new ChainHarness(cluster.kubeConfig, env);
    await harness.start([hostLookup, inventoryRender, kudJobLaunch]);
    noImageHarness = new ChainHarness(cluster.kubeConfig, { ...env, KUD_IMAGE: absentImage });
    await noImageHarness.start([hostLookup, inventoryRender, kudJobLaunch]);
  });
  afterAll(async () => {
    await harness?.stop();
    await noImageHarness?.stop();
    if (functionsNamespace) await deleteNamespace(cluster.kubeConfig, functionsNamespace);
  });

  it('launches a new Job when a spec change keeps the inventory but adds a plugin', async () => {
    await start('plugins', 1, { kudPlugins: ['multus'] });
    const first = await readJob('kud-plugins');
    await releaseKudJob(fns(), 'plugins', 0);
    expect((await waitForJobEnd(cluster.kubeConfig, fns(), 'kud-plugins')).ended).toMatchObject({
      type: 'Complete',
    });
    await harness.publish(await jobUpdateEvent(cluster.kubeConfig, fns(), 'kud-plugins'));
    const ready = await status('plugins');
    expect(conditionOf(ready, 'Ready')).toMatchObject({ status: 'True' });
    // What the Job mounted was written in the functions' namespace, from status.nodes; every object
    // made for the Provisioning is recorded by uid.
    const mounted = await core().readNamespacedConfigMap({ name: 'plugins-inventory', namespace: fns() });
    const tenantCopy = await core().readNamespacedConfigMap({ name: 'plugins-inventory', namespace: ns() });
    expect(mounted.data).toEqual(tenantCopy.data);
    expect(mounted.metadata?.labels?.['bpa.akraino.org/provisioning-uid']).toBe(ready.metadata.uid);
    const ipMap = await core().readNamespacedConfigMap({ name: 'plugins-configmap', namespace: ns() });
    expect((ready.status as { ownedObjects?: unknown[] }).ownedObjects).toEqual(
      expect.arrayContaining([
        { kind: 'ConfigMap', namespace: ns(), name: 'plugins-inventory', uid: tenantCopy.metadata?.uid },
        { kind: 'ConfigMap', namespace: fns(), name: 'plugins-inventory', uid: mounted.metadata?.uid },
        { kind: 'Job', namespace: fns(), name: 'kud-plugins', uid: first.metadata?.uid },
        { kind: 'ConfigMap', namespace: ns(), name: 'plugins-configmap', uid: ipMap.metadata?.uid },
      ]),
    );
    expect(first.metadata?.ownerReferences).toBeUndefined();
    expect(await batch().listNamespacedJob({ namespace: ns() })).toMatchObject({ items: [] });

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

  it('never adopts a Job the functions did not create in their namespace: ObjectConflict naming it, the Job untouched', async () => {
    // An operator's own Job of that name (tenants cannot write the functions' namespace).
    const foreign: V1Job = {
      metadata: { name: 'kud-foreign', namespace: fns(), labels: { cluster: 'foreign' } },
      spec: {
        template: {
          spec: { restartPolicy: 'Never', containers: [{ name: 'x', image: 'busybox', command: ['true'] }] },
        },
      },
    };
    const created = await batch().createNamespacedJob({ namespace: fns(), body: foreign });
    const { deliveries } = await start('foreign', 3);
    expect(summary(deliveries).at(-1)).toEqual(['kud-job-launch', 200, EventTypes.provisioningFailed]);
    expect(conditionOf(await status('foreign'), 'Ready')).toMatchObject({
      status: 'False',
      reason: 'ObjectConflict',
      message: expect.stringContaining(
        `Job ${fns()}/kud-foreign already exists and was not created by bpa-functions`,
      ),
    });
    // Once the Job controller has written its status (startTime), nothing else may have written since.
    const after = await waitFor(
      async () => {
        const job = await readJob('kud-foreign');
        return job.status?.startTime ? job : undefined;
      },
      { what: 'the Job controller’s status of kud-foreign', timeoutMs: 60_000, intervalMs: 250 },
    );
    expect(after.metadata?.uid).toBe(created.metadata?.uid);
    expect(after.metadata?.generation).toBe(created.metadata?.generation);
    expect(after.spec).toEqual(created.spec);
    expect(after.metadata?.labels).toEqual(created.metadata?.labels);
    expect(after.metadata?.annotations).toEqual(created.metadata?.annotations);
    expect(after.metadata?.ownerReferences).toEqual(created.metadata?.ownerReferences);
    const creators = new Set((created.metadata?.managedFields ?? []).map((f) => f.manager));
    const since = (after.metadata?.managedFields ?? []).filter((f) => !creators.has(f.manager));
    expect(since.map((f) => [f.manager, f.subresource])).toEqual([['kube-controller-manager', 'status']]);
  });

  it('never adopts a pre-existing <cluster>-configmap when the Job succeeds', async () => {
    const planted = await core().createNamespacedConfigMap({
      namespace: ns(),
      body: {
        metadata: { name: 'ipmap-configmap', labels: { cluster: 'ipmap' } },
        data: { MASTER_m: '192.0.2.1' },
      },
    });
    await start('ipmap', 4);
    await releaseKudJob(fns(), 'ipmap', 0);
    expect((await waitForJobEnd(cluster.kubeConfig, fns(), 'kud-ipmap')).ended).toMatchObject({
      type: 'Complete',
    });
    // Older than the ownership grace: a look-alike, not a concurrent delivery's fresh one.
    await pastOwnershipGrace(planted.metadata);
    const deliveries = await harness.publish(await jobUpdateEvent(cluster.kubeConfig, fns(), 'kud-ipmap'));
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
  }, 120_000);

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
      namespace: fns(),
      body: { propagationPolicy: 'Background' },
    });
    const sent = await sweepKudJobLaunch();
    expect(sent.map((e) => e.type)).toEqual([EventTypes.kudJobLaunched]);
    const second = await readJob('kud-missing');
    expect(second.metadata?.uid).not.toBe(first.metadata?.uid);
    const live = await status('missing');
    expect(conditionOf(live, 'KudInstalled')).toMatchObject({ status: 'False', reason: 'JobMissing' });
    expect(conditionOf(live, 'JobLaunched')).toMatchObject({ status: 'True' });
    // The new Job completes the chain as usual (released once the first one's pod is gone).
    await waitForPodsGone(
      cluster.kubeConfig,
      fns(),
      `batch.kubernetes.io/controller-uid=${first.metadata?.uid}`,
    );
    await releaseKudJob(fns(), 'missing', 0);
    expect((await waitForJobEnd(cluster.kubeConfig, fns(), 'kud-missing')).ended).toMatchObject({
      type: 'Complete',
    });
    await harness.publish(await jobUpdateEvent(cluster.kubeConfig, fns(), 'kud-missing'));
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
          matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': fns() } } },
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
          .createNamespacedJob({ namespace: fns(), body: probe, dryRun: 'All' })
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
      .readNamespacedJob({ name: 'kud-cancel', namespace: fns() })
      .catch(() => undefined);
    // Deleted (background propagation: gone, or going with a deletionTimestamp).
    expect(job === undefined || job.metadata?.deletionTimestamp !== undefined).toBe(true);
  });

  it('says JobDeadlineExceeded when the Job ran past its deadline', async () => {
    // Never released: the Job controller fails it at its activeDeadlineSeconds.
    await start('slow', 9, {}, { installTimeoutSeconds: 3 });
    const job = await waitForJobEnd(cluster.kubeConfig, fns(), 'kud-slow');
    expect(job.ended).toMatchObject({ type: 'Failed', reason: 'DeadlineExceeded' });
    expect(job.spec?.activeDeadlineSeconds).toBe(3);
    await harness.publish(await jobUpdateEvent(cluster.kubeConfig, fns(), 'kud-slow'));
    expect(conditionOf(await status('slow'), 'Ready')).toMatchObject({
      status: 'False',
      reason: 'JobDeadlineExceeded',
      message: expect.stringContaining('exceeded its deadline of 3 s, KUD not installed in Cluster slow'),
    });
  }, 180_000);

  it('shows the running Job’s pod, why it waits and the time left', async () => {
    // The pod's image is not on the node: the kubelet's pull fails and keeps it waiting.
    await start('progress', 10, {}, {}, noImageHarness);
    const pod = await waitFor(
      async () => {
        const pods = await core().listNamespacedPod({
          namespace: fns(),
          labelSelector: 'job-name=kud-progress',
        });
        const found = pods.items[0];
        const waiting = found?.status?.containerStatuses?.[0]?.state?.waiting;
        return waiting?.message?.includes(absentImage) ? found : undefined;
      },
      { what: 'the pod of kud-progress waiting for its image', timeoutMs: 60_000, intervalMs: 250 },
    );
    const sweptAt = Date.now();
    await sweepKudJobLaunch();
    const startTime = (await readJob('kud-progress')).status?.startTime;
    const progress = (await status('progress')).status as { job?: Record<string, unknown> };
    expect(progress.job).toMatchObject({
      name: 'kud-progress',
      namespace: fns(),
      pod: pod.metadata?.name,
      phase: 'Pending',
    });
    // The kubelet's reason and message, relayed (it alternates between the two while it retries).
    expect(['ErrImagePull', 'ImagePullBackOff']).toContain(progress.job?.waitingReason);
    expect(progress.job?.waitingMessage).toContain(`"${absentImage}"`);
    expect(progress.job?.pod).toMatch(/^kud-progress-[a-z0-9]{5}$/);
    // The default deadline, 7200 s, counted from the startTime the Job controller wrote.
    const expected = 7200 - (sweptAt - new Date(startTime ?? 0).getTime()) / 1000;
    expect(progress.job?.secondsLeft).toBeGreaterThan(expected - 10);
    expect(progress.job?.secondsLeft).toBeLessThanOrEqual(Math.ceil(expected) + 1);
  });

  it('shows the running Job’s pod on the Job’s own update, without a sweep', async () => {
    // kud-waits: the installer runs until released, so its pod is Running and Ready, and the Job
    // controller's status update (ready: 1) is the event; no ping is delivered in this test.
    await start('live', 11);
    const job = await waitFor(
      async () => {
        const found = await readJob('kud-live');
        return (found.status?.ready ?? 0) >= 1 ? found : undefined;
      },
      { what: 'the Job controller counting kud-live’s pod ready', timeoutMs: 60_000, intervalMs: 250 },
    );
    const pods = await core().listNamespacedPod({ namespace: fns(), labelSelector: 'job-name=kud-live' });
    expect(pods.items).toHaveLength(1);
    expect(pods.items[0]?.status?.phase).toBe('Running');
    expect(((await status('live')).status as { job?: unknown }).job).toBeUndefined();
    const deliveries = await harness.publish(await jobUpdateEvent(cluster.kubeConfig, fns(), 'kud-live'));
    expect(summary(deliveries).filter(([target]) => target === 'kud-job-launch')).toEqual([
      ['kud-job-launch', 204, undefined],
    ]);
    const progress = (await status('live')).status as { job?: Record<string, unknown> };
    expect(progress.job).toMatchObject({
      name: 'kud-live',
      namespace: fns(),
      pod: pods.items[0]?.metadata?.name,
      nodeName: pods.items[0]?.spec?.nodeName,
      phase: 'Running',
      deadline: expect.any(String),
    });
    expect(progress.job?.waitingReason).toBeUndefined();
    expect(progress.job?.secondsLeft).toBeGreaterThan(7200 - 120);
    expect(job.status?.startTime).toBeDefined();
    // Released and ended: the update of an ended Job records the completion, not progress.
    await releaseKudJob(fns(), 'live', 0);
    await waitForJobEnd(cluster.kubeConfig, fns(), 'kud-live');
    const ended = await harness.publish(await jobUpdateEvent(cluster.kubeConfig, fns(), 'kud-live'));
    expect(ended.map((d) => d.reply?.type)).toContain(EventTypes.clusterReady);
    expect(conditionOf(await status('live'), 'Ready')).toMatchObject({ status: 'True' });
  }, 180_000);

  it('keeps a failed pod’s last log lines on the Provisioning (tenants cannot read pods there)', async () => {
    await start('broken', 12);
    await releaseKudJob(fns(), 'broken', 1);
    expect((await waitForJobEnd(cluster.kubeConfig, fns(), 'kud-broken')).ended).toMatchObject({
      type: 'Failed',
    });
    await harness.publish(await jobUpdateEvent(cluster.kubeConfig, fns(), 'kud-broken'));
    const live = await status('broken');
    expect(conditionOf(live, 'Ready')).toMatchObject({ status: 'False', reason: 'JobFailed' });
    const job = (live.status as { job?: Record<string, unknown> }).job;
    expect(job).toMatchObject({
      name: 'kud-broken',
      namespace: fns(),
      pod: expect.stringMatching(/^kud-broken-[a-z0-9]{5}$/),
      phase: 'Failed',
      nodeName: expect.any(String),
    });
    expect(job?.logTail).toContain('[kud-installer test image] released: exit 1');
    expect(Buffer.byteLength(String(job?.logTail))).toBeLessThanOrEqual(2048);
    expect(conditionOf(live, 'Ready')?.message).toContain(`(pod ${String(job?.pod)})`);
  }, 180_000);
});
