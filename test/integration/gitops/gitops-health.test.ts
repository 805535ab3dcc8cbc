/**
 * GitOps tools read the truth (contract section 13): real Provisionings, Softwares and Images,
 * driven by the functions (their real HTTP servers, test/integration/functions/support) on the
 * real kube-apiserver into the states of contract sections 10-11 and docs/images.md, read back
 * from the API server and judged by engines/gitops-check: the real kstatus library
 * (sigs.k8s.io/cli-utils status.Compute), the shipped Flux healthCheckExprs run by cel-go as
 * kustomize-controller runs them, and the shipped Argo CD Lua run by gopher-lua as Argo CD runs it.
 *
 * InProgress (Progressing) while working or waiting, Current (Healthy) when Ready, Failed
 * (Degraded) when it cannot go on without a change.
 *
 * Imitations, said here: the Provisioning part does not use the node, so no KUD pod runs; the KUD Job's end
 * (Complete or Failed, with the companion condition the API server requires) is written onto the
 * real Job's status by the test, in the Job controller's place, and kud-job-launch reads it from
 * the API server as usual. Softwares
 * are installed by their install Jobs, on the run's node, over SSH to real OpenSSH hosts on its
 * lab network (test/support/node-lab-hosts.ts); the Image goes through the real image service
 * (tus, versitygw).
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
  type V1Job,
} from '@kubernetes/client-node';
import { Upload } from 'tus-js-client';
import { definition as hostLookup } from '../../../functions/host-lookup/index.js';
import { definition as inventoryRender } from '../../../functions/inventory-render/index.js';
import { definition as kudJobLaunch } from '../../../functions/kud-job-launch/index.js';
import { definition as softwareInstall } from '../../../functions/software-install/index.js';
import { startLocalImageService, type LocalImageService } from '../../../local/image-service.js';
import { imageObjectName } from '../../../shared/core/image-names.js';
import { EventTypes } from '../../../shared/events/types.js';
import { kubeClients } from '../../../shared/k8s/clients.js';
import { readImage } from '../../../shared/k8s/image.js';
import { silentLogger } from '../../../shared/log.js';
import { useTestCluster } from '../../support/cluster.js';
import { pastOwnershipGrace } from '../../support/ownership.js';
import { createKudSshKeySecret, describeOnNode } from '../../support/node.js';
import { serviceAccountToken } from '../../support/service-account-kubeconfig.js';
import { type SshHosts } from '../../support/sshd.js';
import { startNodeSshHosts } from '../../support/node-lab-hosts.js';
import { waitFor } from '../../../local/control-plane/index.js';
import {
  ChainHarness,
  jobUpdateEvent,
  pingEvent,
  replyTypes,
  sourceEvent,
} from '../functions/support/chain-harness.js';
import {
  bpaGroup,
  createBareMetalHost,
  createProvisioning,
  provisioningObject,
  writeProvisioningStatus,
} from '../functions/support/fixtures.js';
import { judgeOne, type GitopsVerdicts } from './gitops-check.js';

const cluster = useTestCluster({ namespacePrefix: 'gitops' });
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const custom = () => cluster.kubeConfig.makeApiClient(CustomObjectsApi);
const core = () => cluster.kubeConfig.makeApiClient(CoreV1Api);
const batch = () => cluster.kubeConfig.makeApiClient(BatchV1Api);
const ns = () => cluster.namespace;

type Expected = 'InProgress' | 'Current' | 'Failed';
const argoFor: Record<Expected, string> = {
  InProgress: 'Progressing',
  Current: 'Healthy',
  Failed: 'Degraded',
};

/** kstatus, Flux's CEL and Argo CD's Lua agree on the object as stored. */
function expectJudged(object: unknown, expected: Expected): GitopsVerdicts {
  const verdict = judgeOne(object);
  expect({ kstatus: verdict.kstatus.status, flux: verdict.flux?.status, argo: verdict.argo?.status }).toEqual(
    {
      kstatus: expected,
      flux: expected,
      argo: argoFor[expected],
    },
  );
  return verdict;
}

const readAs = async (plural: string, name: string) =>
  (await custom().getNamespacedCustomObject({ ...bpaGroup, plural, namespace: ns(), name })) as {
    apiVersion: string;
    kind: string;
    metadata: { name: string; namespace: string; generation: number; uid: string };
    status?: {
      observedGeneration?: number;
      conditions?: { type: string; status: string; reason?: string }[];
    };
  };
const conditionTypes = (object: Awaited<ReturnType<typeof readAs>>) =>
  (object.status?.conditions ?? []).filter((c) => c.status === 'True').map((c) => c.type);

describe('Provisioning', () => {
  let harness: ChainHarness;
  const mac = (i: number) => `dd:00:00:00:0a:${String(i).padStart(2, '0')}`;

  beforeAll(async () => {
    for (let i = 1; i <= 6; i++)
      await createBareMetalHost(cluster.kubeConfig, {
        name: `gh-${i}`,
        namespace: ns(),
        bootMac: mac(i),
        nics: [{ name: 'eth0', mac: mac(i), ip: `10.41.0.${i}` }],
      });
    await createKudSshKeySecret(cluster.kubeConfig, ns());
    harness = new ChainHarness(cluster.kubeConfig, {
      BMH_NAMESPACE: ns(),
      IP_SOURCES: 'nics',
      SWEEP_NAMESPACES: ns(),
      KUD_IMAGE: 'bpa.local/test/kud-waits:1',
    });
    await harness.start([hostLookup, inventoryRender, kudJobLaunch]);
  });
  afterAll(() => harness?.stop());

  const provision = async (name: string, masterMac: string) => {
    const created = await createProvisioning(
      cluster.kubeConfig,
      provisioningObject({ name, namespace: ns(), cluster: name, masters: [{ label: 'm', mac: masterMac }] }),
    );
    const deliveries = await harness.publish(sourceEvent('add', created));
    return { created, deliveries };
  };
  const read = (name: string) => readAs('provisionings', name);
  const kudJob = async (name: string): Promise<V1Job> => {
    const jobs = await batch().listJobForAllNamespaces({ labelSelector: `cluster=${name}` });
    const job = jobs.items.find((j) => j.metadata?.name === `kud-${name}`);
    if (!job) throw new Error(`no Job kud-${name}`);
    return job;
  };
  /**
   * The end of a Job as the Job controller writes it (see the header): its pod cannot run here, so
   * the test writes Complete or Failed, with the companion condition the API server requires.
   */
  const endJob = async (name: string, outcome: 'Complete' | 'Failed') => {
    const companion = outcome === 'Complete' ? 'SuccessCriteriaMet' : 'FailureTarget';
    const reason = outcome === 'Complete' ? 'CompletionsReached' : 'BackoffLimitExceeded';
    let job = await kudJob(name);
    for (let attempt = 1; ; attempt++) {
      const now = new Date();
      const condition = (type: string) => ({
        type,
        status: 'True',
        reason,
        message: `${type} (written by the test)`,
        lastProbeTime: now,
        lastTransitionTime: now,
      });
      try {
        await batch().replaceNamespacedJobStatus({
          name: job.metadata?.name ?? '',
          namespace: job.metadata?.namespace ?? '',
          body: {
            ...job,
            status: {
              startTime: job.status?.startTime ?? new Date(now.getTime() - 1000),
              ...(outcome === 'Complete' ? { completionTime: now, succeeded: 1 } : { failed: 1 }),
              active: 0,
              ready: 0,
              conditions: [condition(companion), condition(outcome)],
            },
          },
        });
        break;
      } catch (error) {
        // The Job controller wrote in between (it counts the pending pod): read again.
        if (attempt >= 5 || (error as { code?: number }).code !== 409) throw error;
        job = await kudJob(name);
      }
    }
    return harness.publish(
      await jobUpdateEvent(cluster.kubeConfig, job.metadata?.namespace ?? '', job.metadata?.name ?? ''),
    );
  };

  it('is InProgress for Flux and Argo CD until the functions write a status (kstatus alone says Current)', async () => {
    const created = await createProvisioning(
      cluster.kubeConfig,
      provisioningObject({
        name: 'unseen',
        namespace: ns(),
        cluster: 'unseen',
        masters: [{ label: 'm', mac: mac(6) }],
      }),
    );
    const verdict = judgeOne(await read('unseen'));
    // No status at all: kstatus has nothing to go on (documented in docs/deploy.md).
    expect(verdict.kstatus.status).toBe('Current');
    // Flux: `status` is not there to evaluate, which Flux treats as not healthy yet (it waits).
    expect(verdict.flux?.status === 'InProgress' || verdict.flux?.error !== undefined).toBe(true);
    expect(verdict.flux?.status).not.toBe('Current');
    expect(verdict.argo?.status).toBe('Progressing');
    expect(created.metadata.generation).toBe(1);
  });

  it('walks the chain: InProgress while the Job runs, Current once it succeeded, InProgress on a spec change', async () => {
    const { deliveries } = await provision('happy', mac(1));
    expect(deliveries.map((d) => d.reply?.type)).toEqual([
      EventTypes.hostsResolved,
      EventTypes.inventoryRendered,
      EventTypes.kudJobLaunched,
    ]);
    const running = await read('happy');
    expect(running.status?.observedGeneration).toBe(1);
    expect(conditionTypes(running)).toContain('Reconciling');
    expectJudged(running, 'InProgress');

    const ended = await endJob('happy', 'Complete');
    expect(ended.map((d) => d.reply?.type)).toContain(EventTypes.clusterReady);
    const ready = await read('happy');
    expect(conditionTypes(ready)).not.toContain('Reconciling');
    expect(conditionTypes(ready)).not.toContain('Stalled');
    expectJudged(ready, 'Current');

    // A spec change: the new generation is not observed until host-lookup writes.
    await custom().patchNamespacedCustomObject(
      {
        ...bpaGroup,
        plural: 'provisionings',
        namespace: ns(),
        name: 'happy',
        body: { spec: { KUDPlugins: ['emco'] } },
      },
      mergePatch,
    );
    const changed = await read('happy');
    expect(changed.metadata.generation).toBe(2);
    expect(changed.status?.observedGeneration).toBe(1);
    expectJudged(changed, 'InProgress');
    await harness.publish(sourceEvent('update', changed));
    const rerun = await read('happy');
    expect(rerun.status?.observedGeneration).toBe(2);
    expectJudged(rerun, 'InProgress');
  });

  it('is Failed when the KUD Job failed, and InProgress again on bpa.akraino.org/retry', async () => {
    await provision('failing', mac(2));
    await endJob('failing', 'Failed');
    const failed = await read('failing');
    expect(failed.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ reason: 'JobFailed' });
    const verdict = expectJudged(failed, 'Failed');
    expect(verdict.kstatus.message).toMatch(/^Job Failed, KUD not installed in Cluster failing/);
    expect(verdict.argo?.message).toMatch(/^JobFailed: /);

    await custom().patchNamespacedCustomObject(
      {
        ...bpaGroup,
        plural: 'provisionings',
        namespace: ns(),
        name: 'failing',
        body: { metadata: { annotations: { 'bpa.akraino.org/retry': '1' } } },
      },
      mergePatch,
    );
    await harness.publish(sourceEvent('update', await read('failing')));
    await waitFor(
      async () => (conditionTypes(await read('failing')).includes('Reconciling') ? true : undefined),
      {
        what: 'the retried Provisioning to reconcile',
        timeoutMs: 10_000,
      },
    );
    expectJudged(await read('failing'), 'InProgress');
  });

  it('is Failed when cancelled', async () => {
    await provision('cancelled', mac(3));
    await custom().patchNamespacedCustomObject(
      {
        ...bpaGroup,
        plural: 'provisionings',
        namespace: ns(),
        name: 'cancelled',
        body: { metadata: { annotations: { 'bpa.akraino.org/cancel': 'true' } } },
      },
      mergePatch,
    );
    await harness.publish(sourceEvent('update', await read('cancelled')));
    await harness.deliver('kud-job-launch', pingEvent());
    const cancelled = await read('cancelled');
    expect(cancelled.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      reason: 'Cancelled',
    });
    expectJudged(cancelled, 'Failed');
  });

  it('is InProgress while waiting for a host, Failed for an invalid spec, a taken cluster name or a conflicting object', async () => {
    const { deliveries } = await provision('no-host', 'dd:00:00:00:0b:01');
    expect(deliveries[0]?.reply?.data).toMatchObject({ reason: 'HostNotFound' });
    expectJudged(await read('no-host'), 'InProgress');

    const twice = await createProvisioning(
      cluster.kubeConfig,
      provisioningObject({
        name: 'bad-mac',
        namespace: ns(),
        cluster: 'bad-mac',
        masters: [
          { label: 'a', mac: 'dd:00:00:00:0c:01' },
          { label: 'b', mac: 'dd:00:00:00:0c:01' },
        ],
      }),
    );
    await harness.publish(sourceEvent('add', twice));
    expect((await read('bad-mac')).status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      reason: 'DuplicateMacAddress',
    });
    expectJudged(await read('bad-mac'), 'Failed');

    // Another Provisioning names the cluster of `happy`.
    const second = await createProvisioning(
      cluster.kubeConfig,
      provisioningObject({
        name: 'second',
        namespace: ns(),
        cluster: 'happy',
        masters: [{ label: 'm', mac: mac(4) }],
      }),
    );
    await harness.publish(sourceEvent('add', second));
    const taken = await read('second');
    expect(taken.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      reason: 'ClusterNameInUse',
    });
    expect(expectJudged(taken, 'Failed').kstatus.message).toMatch(
      /^Cluster happy is already provisioned by /,
    );

    // A `<cluster>-configmap` the functions did not create.
    const planted = await core().createNamespacedConfigMap({
      namespace: ns(),
      body: { metadata: { name: 'conflict-configmap', labels: { cluster: 'conflict' } }, data: {} },
    });
    await provision('conflict', mac(5));
    // Older than the ownership grace: a look-alike, not a concurrent delivery's fresh one.
    await pastOwnershipGrace(planted.metadata);
    await endJob('conflict', 'Complete');
    const conflict = await read('conflict');
    expect(conflict.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      reason: 'ObjectConflict',
    });
    expectJudged(conflict, 'Failed');
  }, 120_000);

  // Contract section 13: Metal3's states, written by hand here (the real baremetal-operator drives
  // them in test/integration/functions/metal3-provisioning.test.ts).
  it('is InProgress while Metal3 provisions its host, Failed when the host is in an error state', async () => {
    await createBareMetalHost(cluster.kubeConfig, {
      name: 'gh-provisioning',
      namespace: ns(),
      bootMac: 'dd:00:00:00:0d:01',
      nics: [{ name: 'eth0', mac: 'dd:00:00:00:0d:01', ip: '10.41.1.1' }],
      state: 'provisioning',
    });
    await provision('metal3-waits', 'dd:00:00:00:0d:01');
    const waiting = await read('metal3-waits');
    expect(waiting.status?.conditions?.find((c) => c.type === 'HostsResolved')).toMatchObject({
      status: 'Unknown',
      reason: 'WaitingForProvisioning',
    });
    expectJudged(waiting, 'InProgress');

    await createBareMetalHost(cluster.kubeConfig, {
      name: 'gh-broken',
      namespace: ns(),
      bootMac: 'dd:00:00:00:0d:02',
      nics: [{ name: 'eth0', mac: 'dd:00:00:00:0d:02', ip: '10.41.1.2' }],
      state: 'registering',
      error: { type: 'registration error', message: 'Failed to get BMC credentials' },
    });
    await provision('metal3-fails', 'dd:00:00:00:0d:02');
    const failed = await read('metal3-fails');
    expect(failed.status?.conditions?.find((c) => c.type === 'HostsResolved')).toMatchObject({
      status: 'False',
      reason: 'HostProvisioningFailed',
    });
    expectJudged(failed, 'Failed');
  });

  it('is InProgress (kstatus: Terminating) while deleting', async () => {
    await custom().deleteNamespacedCustomObject({
      ...bpaGroup,
      plural: 'provisionings',
      namespace: ns(),
      name: 'happy',
    });
    const deleting = await read('happy');
    const verdict = judgeOne(deleting);
    expect(verdict.kstatus.status).toBe('Terminating');
    expect(verdict.argo?.status).toBe('Progressing');
  });
});

describeOnNode('Software', () => {
  let lab: SshHosts;
  let harness: ChainHarness;
  const read = (name: string) => readAs('softwares', name);

  beforeAll(async () => {
    lab = await startNodeSshHosts({ count: 2 });
    await core().createNamespacedSecret({
      namespace: ns(),
      body: {
        metadata: { name: 'software-ssh-key' },
        data: { id_rsa: Buffer.from(lab.privateKey).toString('base64') },
      },
    });
    harness = new ChainHarness(cluster.kubeConfig, {
      SSH_KEY_SECRET: 'software-ssh-key',
      SSH_USER: lab.username,
      SSH_PORT: String(lab.port),
      SSH_CONNECT_TIMEOUT_SECONDS: '30',
      SSH_TIMEOUT_SECONDS: '30',
      INSTALL_RETRY_DELAY_SECONDS: '0',
    });
    await harness.start([softwareInstall]);
  }, 120_000);
  afterAll(async () => {
    await harness?.stop();
    await lab?.stopAll();
  });

  const provisioned = async (name: string, ip: string, ready: boolean) => {
    await createProvisioning(
      cluster.kubeConfig,
      provisioningObject({
        name,
        namespace: ns(),
        cluster: name,
        masters: [{ label: 's1', mac: 'aa:bb:cc:00:0c:01' }],
      }),
    );
    await writeProvisioningStatus(cluster.kubeConfig, ns(), name, {
      conditions: [
        ready
          ? { type: 'Ready', status: 'True', reason: 'ClusterReady', message: `${name} is ready` }
          : { type: 'Ready', status: 'Unknown', reason: 'Provisioning', message: 'KUD is installing' },
      ],
    });
    await core().createNamespacedConfigMap({
      namespace: ns(),
      body: { metadata: { name: `${name}-configmap`, labels: { cluster: name } }, data: { MASTER_s1: ip } },
    });
  };
  const software = async (name: string, clusterName: string, spec: Record<string, unknown>) => {
    await custom().createNamespacedCustomObject({
      ...bpaGroup,
      plural: 'softwares',
      namespace: ns(),
      body: {
        apiVersion: 'bpa.akraino.org/v1alpha1',
        kind: 'Software',
        metadata: { name, namespace: ns(), labels: { cluster: clusterName } },
        spec,
      },
    });
    return harness.publish(sourceEvent('update', await read(name)));
  };

  it('is InProgress while its cluster is not Ready, Current once installed', async () => {
    const ip = lab.hosts[0]?.ip ?? '';
    await provisioned('sw-gated', ip, false);
    await software('sw-gated-tools', 'sw-gated', { masterSoftware: ['htop'] });
    const waiting = await read('sw-gated-tools');
    expect(waiting.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      reason: 'ClusterNotReady',
    });
    expectJudged(waiting, 'InProgress');

    await provisioned('sw-ready', ip, true);
    const deliveries = await software('sw-ready-tools', 'sw-ready', { masterSoftware: ['htop'] });
    expect(replyTypes(deliveries)).toEqual([EventTypes.softwareInstalled]);
    const installed = await read('sw-ready-tools');
    expect(installed.status?.observedGeneration).toBe(installed.metadata.generation);
    expectJudged(installed, 'Current');
  });

  it('is Failed when the install failed on a host, and for an invalid spec', async () => {
    const ip = lab.hosts[1]?.ip ?? '';
    await lab.setBehaviour(ip, { kind: 'fail', exitCode: 100, stderr: 'E: Unable to fetch some archives' });
    await provisioned('sw-failing', ip, true);
    const deliveries = await software('sw-failing-tools', 'sw-failing', { masterSoftware: ['htop'] });
    expect(replyTypes(deliveries)).toEqual([EventTypes.softwareFailed]);
    const failed = await read('sw-failing-tools');
    expect(failed.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      reason: 'InstallFailed',
    });
    expectJudged(failed, 'Failed');

    await software('sw-invalid', 'sw-ready', { masterSoftware: [42] });
    const invalid = await read('sw-invalid');
    expect(invalid.status?.conditions?.find((c) => c.type === 'Ready')?.reason).toMatch(/^Invalid/);
    expectJudged(invalid, 'Failed');
  });
});

describe('Image', () => {
  let images: LocalImageService;
  let token: string;

  beforeAll(async () => {
    images = await startLocalImageService({ kubeConfig: cluster.kubeConfig, log: silentLogger });
    await core().createNamespacedServiceAccount({ namespace: ns(), body: { metadata: { name: 'dev' } } });
    const rbac = cluster.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace: ns(),
      body: {
        metadata: { name: 'image-writer' },
        rules: [
          {
            apiGroups: ['bpa.akraino.org'],
            resources: ['images'],
            verbs: ['create', 'get', 'update', 'delete'],
          },
        ],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: ns(),
      body: {
        metadata: { name: 'dev-edit' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'image-writer' },
        subjects: [{ kind: 'ServiceAccount', name: 'dev', namespace: ns() }],
      },
    });
    token = await serviceAccountToken(cluster.kubeConfig, ns(), 'dev');
  }, 60_000);
  afterAll(() => images?.stop());

  const tusMetadata = (fields: Record<string, string>) =>
    Object.entries(fields)
      .map(([key, value]) => `${key} ${Buffer.from(value).toString('base64')}`)
      .join(',');
  const upload = (data: Buffer, name: string, extra: Record<string, string> = {}) =>
    new Promise<void>((resolve, reject) => {
      new Upload(data, {
        endpoint: images.uploadUrl,
        headers: { authorization: `Bearer ${token}` },
        metadata: { owner: ns(), cluster: 'edge', type: 'os', name, ...extra },
        onError: reject,
        onSuccess: () => resolve(),
      }).start();
    });
  const read = async (name: string) => {
    const image = await readImage(kubeClients(cluster.kubeConfig), ns(), imageObjectName('edge', 'os', name));
    if (!image) throw new Error(`no Image for ${name}`);
    return image;
  };

  /**
   * In `phase` and done writing it. image-verify writes its verdict in two requests: the apply of
   * phase, Ready and Stalled, then a JSON patch that removes the Reconciling condition
   * image-upload wrote (one manager's apply cannot remove another's condition,
   * shared/k8s/status-apply.ts). A read between the two sees the new phase with Reconciling=True
   * still there, which kstatus and Flux read as InProgress until the second request lands.
   */
  const settled = (image: Awaited<ReturnType<typeof read>>, phase: string) =>
    image.status?.phase === phase &&
    !(image.status?.conditions ?? []).some((c) => c.type === 'Reconciling' && c.status === 'True');

  it('is InProgress while the upload waits for bytes', async () => {
    const response = await fetch(images.uploadUrl, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'tus-resumable': '1.0.0',
        'upload-length': '4096',
        'upload-metadata': tusMetadata({ owner: ns(), cluster: 'edge', type: 'os', name: 'pending.img' }),
      },
    });
    expect(response.status).toBe(201);
    const uploading = await read('pending.img');
    expect(uploading.status?.phase).toBe('Uploading');
    expectJudged(uploading, 'InProgress');
  });

  it('is Current once verified, Failed when the checksum does not match', async () => {
    const data = randomBytes(64 * 1024);
    await upload(data, 'good.img');
    await waitFor(async () => (settled(await read('good.img'), 'Ready') ? true : undefined), {
      what: 'image Ready',
      timeoutMs: 20_000,
    });
    expectJudged(await read('good.img'), 'Current');

    const wrong = createHash('sha256').update('something else').digest('hex');
    await upload(data, 'bad.img', { sha256: wrong });
    await waitFor(async () => (settled(await read('bad.img'), 'Failed') ? true : undefined), {
      what: 'image Failed',
      timeoutMs: 20_000,
    });
    const failed = await read('bad.img');
    expect(failed.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      reason: 'ChecksumMismatch',
    });
    expectJudged(failed, 'Failed');
  });
});
