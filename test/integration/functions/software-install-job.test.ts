/**
 * The install Job's runner (functions/software-install/install-job) against the real
 * kube-apiserver: per-host Leases across Softwares, retries with backoff and their Events, a dead
 * Lease holder taken over, the per-host results on status, and the Job's ServiceAccount, whose
 * Role lets it write that one Software's status and nothing else (the entry point runs as a
 * process with that ServiceAccount's token).
 *
 * Hosts: real Debian roots through real sshd (test/support/debian-host.ts) where apt must run for
 * real; the recording OpenSSH hosts (test/support/sshd.ts) where a host must fail on purpose.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import {
  BatchV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  RbacAuthorizationV1Api,
  Watch,
} from '@kubernetes/client-node';
import { softwareInstallConfigSchema } from '../../../functions/software-install/config.js';
import { hostLeaseName, microTime } from '../../../functions/software-install/host-lease.js';
import {
  installerRole,
  installerRoleBinding,
  installerServiceAccount,
  installerServiceAccountName,
} from '../../../functions/software-install/install-job/job-objects.js';
import {
  runInstallJob,
  type InstallJobContext,
} from '../../../functions/software-install/install-job/run.js';
import { EventTypes } from '../../../shared/events/types.js';
import { createLogger } from '../../../shared/log.js';
import { useTestCluster } from '../../support/cluster.js';
import { startDebianHosts, type DebianHosts } from '../../support/debian-host.js';
import { asServiceAccount } from '../../support/service-account-kubeconfig.js';
import { RecordingKubeConfig } from '../../support/recording-kube-config.js';
import { waitFor } from '../../../local/control-plane/wait.js';
import { startSshHosts, type SshHosts } from '../../support/sshd.js';
import { definition as softwareInstall } from '../../../functions/software-install/index.js';
import { ChainHarness, sourceEvent } from './support/chain-harness.js';
import { bpaGroup, createReadyProvisioning } from './support/fixtures.js';

const run = promisify(execFile);
const cluster = useTestCluster();
const quiet = createLogger({ sink: () => undefined, level: 'error' });

interface StoredSoftware {
  metadata: { name: string; namespace: string; generation: number; uid: string; resourceVersion?: string };
  status?: {
    conditions?: {
      type: string;
      status: string;
      reason?: string;
      message?: string;
      observedGeneration?: number;
    }[];
    hosts?: {
      node: string;
      ip: string;
      exitCode: number | null;
      error?: string;
      attempts?: number;
      hostKeyFingerprint?: string;
    }[];
    installedNodes?: { node: string; ip: string }[];
  };
}

const custom = () => cluster.kubeConfig.makeApiClient(CustomObjectsApi);
const core = () => cluster.kubeConfig.makeApiClient(CoreV1Api);
const leases = () => cluster.kubeConfig.makeApiClient(CoordinationV1Api);

async function createSoftware(name: string, clusterName: string, spec: Record<string, unknown>) {
  return (await custom().createNamespacedCustomObject({
    ...bpaGroup,
    plural: 'softwares',
    namespace: cluster.namespace,
    body: {
      apiVersion: 'bpa.akraino.org/v1alpha1',
      kind: 'Software',
      metadata: { name, labels: { cluster: clusterName } },
      spec,
    },
  })) as StoredSoftware;
}
const readSoftware = async (name: string) =>
  (await custom().getNamespacedCustomObject({
    ...bpaGroup,
    plural: 'softwares',
    namespace: cluster.namespace,
    name,
  })) as StoredSoftware;
const condition = (software: StoredSoftware, type: string) =>
  software.status?.conditions?.find((c) => c.type === type);

async function createClusterNodes(clusterName: string, data: Record<string, string>) {
  await core().createNamespacedConfigMap({
    namespace: cluster.namespace,
    body: { metadata: { name: `${clusterName}-configmap`, labels: { cluster: clusterName } }, data },
  });
}

async function createKeySecret(name: string, privateKey: string) {
  await core().createNamespacedSecret({
    namespace: cluster.namespace,
    body: { metadata: { name }, data: { id_rsa: Buffer.from(privateKey).toString('base64') } },
  });
}

const context = (env: Record<string, string>, instance = 'test-installer'): InstallJobContext => ({
  kubeConfig: cluster.kubeConfig,
  config: softwareInstallConfigSchema.parse(env),
  log: quiet,
  instance,
});

async function events(name: string, reason: string) {
  const list = await core().listNamespacedEvent({
    namespace: cluster.namespace,
    fieldSelector: `involvedObject.name=${name},reason=${reason}`,
  });
  return list.items;
}

describe('on real Debian roots', () => {
  let debian: DebianHosts;
  beforeAll(async () => {
    debian = await startDebianHosts({ count: 2, firstAddress: 80 });
    await createKeySecret('debian-key', debian.privateKey);
    await createClusterNodes('deb', {
      MASTER_m1: debian.hosts[0]?.ip ?? '',
      WORKER_w1: debian.hosts[1]?.ip ?? '',
    });
  }, 300_000);
  afterAll(() => debian?.stopAll());

  const env = () => ({
    SSH_USER: 'root',
    SSH_PORT: String(debian.port),
    SSH_KEY_SECRET: 'debian-key',
    APT_LOCK_TIMEOUT_SECONDS: '60',
  });

  it('two Softwares on the same hosts at once: both installed, one apt at a time per host', async () => {
    const a = await createSoftware('deb-hello', 'deb', {
      masterSoftware: ['hello'],
      workerSoftware: ['hello'],
    });
    const b = await createSoftware('deb-tree', 'deb', { masterSoftware: ['tree'], workerSoftware: ['tree'] });
    const [ra, rb] = await Promise.all([
      runInstallJob(context(env(), 'pod-a'), {
        namespace: cluster.namespace,
        name: 'deb-hello',
        generation: a.metadata.generation,
      }),
      runInstallJob(context(env(), 'pod-b'), {
        namespace: cluster.namespace,
        name: 'deb-tree',
        generation: b.metadata.generation,
      }),
    ]);
    expect(ra.kind).toBe('installed');
    expect(rb.kind).toBe('installed');
    for (const name of ['deb-hello', 'deb-tree']) {
      const software = await readSoftware(name);
      expect(condition(software, 'Ready')).toMatchObject({ status: 'True', reason: 'Installed' });
      expect(software.status?.hosts?.map((h) => [h.ip, h.exitCode, h.attempts])).toEqual([
        [debian.hosts[0]?.ip, 0, 1],
        [debian.hosts[1]?.ip, 0, 1],
      ]);
      // Trust on first use: the keys are pinned in status.
      for (const host of software.status?.hosts ?? []) expect(host.hostKeyFingerprint).toMatch(/^SHA256:/);
      expect(software.status?.installedNodes).toEqual([
        { node: 'm1', ip: debian.hosts[0]?.ip },
        { node: 'w1', ip: debian.hosts[1]?.ip },
      ]);
    }
    for (const host of debian.hosts) {
      expect((await host.shell('hello')).stdout).toBe('Hello, world!\n');
      expect((await host.shell('command -v tree')).code).toBe(0);
      // Both Softwares took each host's Lease in turn; it is free again.
      const lease = await leases().readNamespacedLease({
        name: hostLeaseName(host.ip),
        namespace: cluster.namespace,
      });
      expect(lease.spec?.holderIdentity).toBeUndefined();
      expect(lease.spec?.leaseTransitions).toBe(1);
    }
  }, 240_000);

  it('a Lease whose holder died is taken over once it expires; a live one is waited for', async () => {
    const [dead, live] = debian.hosts as [DebianHosts['hosts'][0], DebianHosts['hosts'][0]];
    const now = Date.now();
    const hold = async (ip: string, holder: string, renewedMsAgo: number, seconds: number) => {
      const name = hostLeaseName(ip);
      const current = await leases().readNamespacedLease({ name, namespace: cluster.namespace });
      await leases().replaceNamespacedLease({
        name,
        namespace: cluster.namespace,
        body: {
          ...current,
          spec: {
            ...current.spec,
            holderIdentity: holder,
            leaseDurationSeconds: seconds,
            renewTime: microTime(new Date(now - renewedMsAgo)),
          },
        },
      });
    };
    await hold(dead.ip, 'other/sw@1/killed-pod', 120_000, 15);
    await hold(live.ip, 'other/sw@1/running-pod', 0, 4);
    const software = await createSoftware('deb-again', 'deb', {
      masterSoftware: ['hello'],
      workerSoftware: ['hello'],
    });
    const started = Date.now();
    const outcome = await runInstallJob(context(env()), {
      namespace: cluster.namespace,
      name: 'deb-again',
      generation: software.metadata.generation,
    });
    expect(outcome.kind).toBe('installed');
    // The live holder's 4 s ran out before the second host could be had.
    expect(Date.now() - started).toBeGreaterThanOrEqual(3000);
    const deadLease = await leases().readNamespacedLease({
      name: hostLeaseName(dead.ip),
      namespace: cluster.namespace,
    });
    expect(deadLease.spec?.holderIdentity).toBeUndefined();
    expect(deadLease.spec?.leaseTransitions).toBe(2);
  }, 120_000);
});

describe('on recording hosts (faults on purpose)', () => {
  let lab: SshHosts;
  beforeAll(async () => {
    lab = await startSshHosts({
      count: 2,
      firstAddress: 90,
      behaviours: [
        { kind: 'succeed' },
        { kind: 'fail', exitCode: 100, stderr: 'E: Could not get lock /var/lib/apt/lists/lock' },
      ],
    });
    await createKeySecret('lab-key', lab.privateKey);
    await createClusterNodes('rec', { MASTER_m1: lab.hosts[0]?.ip ?? '', WORKER_w1: lab.hosts[1]?.ip ?? '' });
  }, 120_000);
  afterAll(() => lab?.stopAll());

  const env = (attempts: number) => ({
    SSH_USER: lab.username,
    SSH_PORT: String(lab.port),
    SSH_KEY_SECRET: 'lab-key',
    INSTALL_ATTEMPTS: String(attempts),
    INSTALL_RETRY_DELAY_SECONDS: '1',
  });

  it('a failing host is retried with backoff, each retry an Event, then the Software is Ready=False', async () => {
    const software = await createSoftware('rec-fail', 'rec', {
      masterSoftware: ['htop'],
      workerSoftware: ['htop'],
    });
    const before = lab.hosts[1]?.commands().length ?? 0;
    const outcome = await runInstallJob(context(env(3)), {
      namespace: cluster.namespace,
      name: 'rec-fail',
      generation: software.metadata.generation,
    });
    expect(outcome.kind).toBe('failed');
    const stored = await readSoftware('rec-fail');
    expect(condition(stored, 'Ready')).toMatchObject({ status: 'False', reason: 'InstallFailed' });
    expect(condition(stored, 'Ready')?.message).toMatch(/Installation failed on 1 of 2 hosts: w1/);
    const [ok, failed] = stored.status?.hosts ?? [];
    expect(ok).toMatchObject({ exitCode: 0, attempts: 1 });
    expect(failed).toMatchObject({ exitCode: 100, attempts: 3 });
    expect(failed?.error).toMatch(/Could not get lock/);
    expect((lab.hosts[1]?.commands().length ?? 0) - before).toBe(3);
    const retries = await events('rec-fail', 'InstallRetrying');
    expect(retries.map((e) => e.message).sort()).toEqual([
      expect.stringMatching(/^Attempt 1 of 3 failed on w1 .*retrying in 1s$/),
      expect.stringMatching(/^Attempt 2 of 3 failed on w1 .*retrying in 2s$/),
    ]);
  }, 120_000);

  it('a host that recovers between attempts ends installed', async () => {
    const host = lab.hosts[1];
    if (!host) throw new Error('no host');
    const software = await createSoftware('rec-recover', 'rec', { workerSoftware: ['htop'] });
    const before = host.commands().length;
    const running = runInstallJob(context(env(3)), {
      namespace: cluster.namespace,
      name: 'rec-recover',
      generation: software.metadata.generation,
    });
    while (host.commands().length === before) await new Promise((r) => setTimeout(r, 50));
    await lab.setBehaviour(host, { kind: 'succeed' });
    expect((await running).kind).toBe('installed');
    const stored = await readSoftware('rec-recover');
    expect(stored.status?.hosts).toEqual([expect.objectContaining({ node: 'w1', exitCode: 0, attempts: 2 })]);
    await lab.setBehaviour(host, {
      kind: 'fail',
      exitCode: 100,
      stderr: 'E: Could not get lock /var/lib/apt/lists/lock',
    });
  }, 120_000);

  it('a Job for an older generation writes nothing', async () => {
    const software = await createSoftware('rec-old', 'rec', { masterSoftware: ['htop'] });
    const outcome = await runInstallJob(context(env(1)), {
      namespace: cluster.namespace,
      name: 'rec-old',
      generation: software.metadata.generation + 1,
    });
    expect(outcome.kind).toBe('superseded');
    expect((await readSoftware('rec-old')).status).toBeUndefined();
  });

  it('the entry point, as the Job’s ServiceAccount: writes its own Software’s status, and may write no other', async () => {
    const software = await createSoftware('rec-rbac', 'rec', { masterSoftware: ['htop'] });
    const other = await createSoftware('rec-other', 'rec', { masterSoftware: ['htop'] });
    const owner = { ...software.metadata, namespace: cluster.namespace };
    const rbac = cluster.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    await core().createNamespacedServiceAccount({
      namespace: cluster.namespace,
      body: installerServiceAccount(owner),
    });
    await rbac.createNamespacedRole({ namespace: cluster.namespace, body: installerRole(owner, 'lab-key') });
    await rbac.createNamespacedRoleBinding({
      namespace: cluster.namespace,
      body: installerRoleBinding(owner),
    });
    const asJob = await asServiceAccount(
      cluster.kubeConfig,
      cluster.namespace,
      installerServiceAccountName('rec-rbac'),
      new KubeConfig(),
    );
    const dir = await mkdtemp(join(tmpdir(), 'bpa-install-job-'));
    try {
      await writeFile(join(dir, 'kubeconfig'), asJob.exportConfig(), { mode: 0o600 });
      const main = resolve('dist/functions/software-install/install-job/main.js');
      if (!existsSync(main)) throw new Error(`${main} is missing: run npm run build first`);
      const { stdout } = await run(
        process.execPath,
        [
          main,
          '--namespace',
          cluster.namespace,
          '--name',
          'rec-rbac',
          '--generation',
          String(software.metadata.generation),
        ],
        {
          env: {
            PATH: process.env.PATH,
            KUBECONFIG: join(dir, 'kubeconfig'),
            HOSTNAME: 'rec-rbac-install-1-abcde',
            ...env(1),
          },
        },
      );
      expect(stdout).toMatch(
        /"msg":"install job done","component":"software-install-job","outcome":"installed"/,
      );
      expect(condition(await readSoftware('rec-rbac'), 'Installed')).toMatchObject({ status: 'True' });

      const jobClient = asJob.makeApiClient(CustomObjectsApi);
      await expect(
        jobClient.replaceNamespacedCustomObjectStatus({
          ...bpaGroup,
          plural: 'softwares',
          namespace: cluster.namespace,
          name: 'rec-other',
          body: { ...other, status: { conditions: [] } },
        }),
      ).rejects.toMatchObject({ code: 403 });
      await expect(
        jobClient.replaceNamespacedCustomObject({
          ...bpaGroup,
          plural: 'softwares',
          namespace: cluster.namespace,
          name: 'rec-rbac',
          body: { ...software, spec: { masterSoftware: ['evil'] } },
        }),
      ).rejects.toMatchObject({ code: 403 });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);

  // Last: it leaves host m1 with a new key that every Software of cluster rec has pinned otherwise.
  it('a changed host key is never retried into acceptance', async () => {
    const software = await createSoftware('rec-key', 'rec', { masterSoftware: ['htop'] });
    const generation = software.metadata.generation;
    expect(
      (await runInstallJob(context(env(3)), { namespace: cluster.namespace, name: 'rec-key', generation }))
        .kind,
    ).toBe('installed');
    const host = lab.hosts[0];
    if (!host) throw new Error('no host');
    await lab.changeHostKey(host);
    const before = host.commands().length;
    // The same generation again (as a retry run would): the pinned key is enforced, once.
    const outcome = await runInstallJob(context(env(3)), {
      namespace: cluster.namespace,
      name: 'rec-key',
      generation,
    });
    expect(outcome.kind).toBe('failed');
    const stored = await readSoftware('rec-key');
    expect(stored.status?.hosts?.[0]).toMatchObject({ attempts: 1, exitCode: null });
    expect(stored.status?.hosts?.[0]?.error).toMatch(/host key has changed/);
    expect(host.commands().length).toBe(before);
  }, 120_000);
});

describe('software-install creates the Job and holds no request open', () => {
  let lab: SshHosts;
  let harness: ChainHarness;
  /** Every API request software-install makes (and only its). */
  let recorder: RecordingKubeConfig;
  beforeAll(async () => {
    recorder = new RecordingKubeConfig();
    recorder.loadFromFile(cluster.kubeconfigPath);
    lab = await startSshHosts({ count: 1, firstAddress: 95 });
    await createKeySecret('ssh-key-secret', lab.privateKey);
    await createReadyProvisioning(cluster.kubeConfig, cluster.namespace, 'launch');
    await createClusterNodes('launch', { MASTER_l1: lab.hosts[0]?.ip ?? '' });
    harness = new ChainHarness(
      recorder,
      {
        SSH_USER: lab.username,
        SSH_PORT: String(lab.port),
        INSTALL_JOB_IMAGE: 'registry.example/bpa/software-install:test',
        INSTALL_RETRY_DELAY_SECONDS: '1',
      },
      { followInstallJobs: false },
    );
    await harness.start([softwareInstall]);
  }, 120_000);
  afterAll(async () => {
    await harness?.stop();
    await lab?.stopAll();
  });

  it('the event creates the Job, its ServiceAccount and Role; the Job’s command, run as that ServiceAccount, installs', async () => {
    // Every version the API server shows, as the ApiServerSource delivers them.
    const shown: StoredSoftware[] = [];
    const watch = await new Watch(cluster.kubeConfig).watch(
      `/apis/bpa.akraino.org/v1alpha1/namespaces/${cluster.namespace}/softwares`,
      { fieldSelector: 'metadata.name=launch-tools' },
      (type: string, object: StoredSoftware) => {
        if (type === 'MODIFIED') shown.push(object);
      },
      () => undefined,
    );
    const software = await createSoftware('launch-tools', 'launch', { masterSoftware: ['htop'] });
    const [delivery] = await harness.publish(sourceEvent('add', software as never));
    expect(delivery?.status).toBe(204);
    expect(lab.hosts[0]?.commands()).toEqual([]);
    let stored = await readSoftware('launch-tools');
    // The echoes of software-install's own writes (the claim, the run's objects, the Job's name)
    // end unread (shared/k8s/own-writes.ts): no API request at all.
    try {
      await waitFor(
        async () =>
          shown.some((o) => o.metadata.resourceVersion === stored.metadata.resourceVersion)
            ? true
            : undefined,
        { what: 'the watch to show the stored Software', timeoutMs: 10_000 },
      );
    } finally {
      watch.abort();
    }
    expect(shown.length).toBeGreaterThanOrEqual(3);
    const beforeEchoes = recorder.calls.length;
    for (const object of shown) {
      const echo = await harness.deliver('software-install', sourceEvent('update', object as never));
      expect([echo.status, echo.reply]).toEqual([204, undefined]);
    }
    expect(recorder.calls.slice(beforeEchoes)).toEqual([]);
    expect(condition(stored, 'Installed')).toMatchObject({ status: 'Unknown', reason: 'Installing' });
    expect(condition(stored, 'Installed')?.message).toBe(
      'Installing on 1 host in Job launch-tools-install-1',
    );

    const batch = cluster.kubeConfig.makeApiClient(BatchV1Api);
    const job = await batch.readNamespacedJob({
      name: 'launch-tools-install-1',
      namespace: cluster.namespace,
    });
    expect(job.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: 'Software',
      name: 'launch-tools',
      controller: true,
    });
    const pod = job.spec?.template.spec;
    expect(pod?.serviceAccountName).toBe('launch-tools-installer');
    const container = pod?.containers[0];
    expect(container?.image).toBe('registry.example/bpa/software-install:test');
    expect(container?.args).toEqual([
      '--namespace',
      cluster.namespace,
      '--name',
      'launch-tools',
      '--generation',
      '1',
    ]);

    // A replay creates nothing twice.
    await harness.publish(sourceEvent('add', software as never));
    const jobs = await batch.listNamespacedJob({
      namespace: cluster.namespace,
      labelSelector: 'bpa.akraino.org/software=launch-tools',
    });
    expect(jobs.items).toHaveLength(1);

    // What the node would run for the Job's pod: its command and args, its env, its ServiceAccount's token.
    const asJob = await asServiceAccount(
      cluster.kubeConfig,
      cluster.namespace,
      'launch-tools-installer',
      new KubeConfig(),
    );
    const dir = await mkdtemp(join(tmpdir(), 'bpa-install-job-'));
    try {
      await writeFile(join(dir, 'kubeconfig'), asJob.exportConfig(), { mode: 0o600 });
      const [command, ...commandArgs] = container?.command ?? [];
      expect(command).toBe('node');
      const env = Object.fromEntries((container?.env ?? []).map((e) => [e.name, e.value ?? '']));
      await run(process.execPath, [...commandArgs.map((a) => resolve(a)), ...(container?.args ?? [])], {
        env: {
          PATH: process.env.PATH,
          KUBECONFIG: join(dir, 'kubeconfig'),
          HOSTNAME: 'launch-tools-install-1-x',
          ...env,
        },
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    stored = await readSoftware('launch-tools');
    expect(condition(stored, 'Ready')).toMatchObject({ status: 'True', reason: 'Installed' });
    expect(lab.hosts[0]?.commands()).toHaveLength(1);
    expect(stored.status?.hosts?.[0]).toMatchObject({ node: 'l1', exitCode: 0, attempts: 1 });

    // The Job's status write comes back as an update: announced on the broker once.
    const [announced] = await harness.publish(sourceEvent('update', stored as never));
    expect(announced?.reply?.type).toBe(EventTypes.softwareInstalled);
    expect(announced?.reply?.data).toMatchObject({ cluster: 'launch', hosts: [{ node: 'l1', exitCode: 0 }] });
    // The announcement's own echo is read (echoWanted): there joined nodes would get an install.
    const beforeAgain = recorder.calls.length;
    const [again] = await harness.publish(
      sourceEvent('update', (await readSoftware('launch-tools')) as never),
    );
    expect(again?.reply).toBeUndefined();
    expect(
      recorder.calls
        .slice(beforeAgain)
        .filter((c) => c.verb === 'get' && c.resource === 'softwares' && c.name === 'launch-tools'),
    ).toHaveLength(1);
    expect(lab.hosts[0]?.commands()).toHaveLength(1);
  }, 120_000);
});
