/**
 * The install Job on the one-machine cluster, end to end (contract section 11): a Software
 * applied -> software-install creates the install Job, its
 * ServiceAccount, Role and RoleBinding -> Kubernetes' own Job controller (kube-controller-manager)
 * makes its pod -> the real node (local/kubelet-node: kubelet + containerd) runs it from
 * software-install's own image (INSTALL_JOB_IMAGE as the node holds it; its entry point is
 * dist/bundle/software-install-job.mjs) -> it reaches the API server through the `kubernetes`
 * Service with its ServiceAccount's token, and real sshd hosts through the node -> the Software's
 * status says Ready. Nothing writes a Job's or a pod's status by hand here.
 *
 * Hosts: a real Debian root through real sshd (test/support/debian-host.ts: apt-get and dpkg run
 * for real) listening on this machine's end of the node's link (pods reach it through the node),
 * and a recording OpenSSH host in a lab namespace on the node's lab bridge that never answers
 * (local/lab/openssh-hosts.ts), whose Job runs past its deadline: the sweep then fails the
 * Software (InstallJobFailed), and `bpa.akraino.org/retry` runs it again once the host answers.
 *
 * Starts its own cluster (its own node index), so it never disturbs the shared suites. Needs root
 * and `npm run build` (the images carry the bundles).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type V1Job,
} from '@kubernetes/client-node';
import { EventTypes } from '../../../shared/events/types.js';
import { createNamespace, uniqueNamespaceName, waitFor } from '../../../local/control-plane/index.js';
import { repoRoot } from '../../../local/control-plane/repo-root.js';
import { createLabNetwork, type LabNetwork } from '../../../local/lab/lab-network.js';
import { startSshHosts, type SshHosts } from '../../../local/lab/openssh-hosts.js';
import { startStackCluster, type StackCluster } from '../../../local/stack/cluster.js';
import { definition as softwareInstall } from '../../../functions/software-install/index.js';
import { startDebianHosts, type DebianHosts } from '../../support/debian-host.js';
import { ChainHarness, pingEvent, sourceEvent } from '../functions/support/chain-harness.js';
import { bpaGroup, createReadyProvisioning } from '../functions/support/fixtures.js';

/** Long enough for a pod to start and apt to install one package on a busy machine. */
const deadlineSeconds = 60;

let cluster: StackCluster;
let network: LabNetwork;
let debian: DebianHosts;
let silent: SshHosts;
let harness: ChainHarness;
/** The Debian host's Software lives here, the silent host's in `stuckNamespace` (each its own SSH key). */
let realNamespace: string;
let stuckNamespace: string;

interface StoredSoftware {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; generation: number; annotations?: Record<string, string> };
  status?: {
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    hosts?: { node: string; ip: string; exitCode: number | null; error?: string }[];
    installJob?: string;
  };
}

const custom = () => cluster.kubeConfig.makeApiClient(CustomObjectsApi);
const core = () => cluster.kubeConfig.makeApiClient(CoreV1Api);
const batch = () => cluster.kubeConfig.makeApiClient(BatchV1Api);

const readSoftware = async (namespace: string, name: string) =>
  (await custom().getNamespacedCustomObject({
    ...bpaGroup,
    plural: 'softwares',
    namespace,
    name,
  })) as StoredSoftware;
const conditionOf = (software: StoredSoftware, type: string) =>
  software.status?.conditions?.find((c) => c.type === type);

async function createSoftware(namespace: string, name: string, clusterName: string, packages: string[]) {
  return (await custom().createNamespacedCustomObject({
    ...bpaGroup,
    plural: 'softwares',
    namespace,
    body: {
      apiVersion: 'bpa.akraino.org/v1alpha1',
      kind: 'Software',
      metadata: { name, labels: { cluster: clusterName } },
      spec: { masterSoftware: packages },
    },
  })) as StoredSoftware;
}

/** A cluster ready for its current generation, whose one master is at `ip`, and the SSH key. */
async function readyCluster(namespace: string, name: string, ip: string, privateKey: string) {
  await createReadyProvisioning(cluster.kubeConfig, namespace, name);
  await core().createNamespacedConfigMap({
    namespace,
    body: {
      metadata: { name: `${name}-configmap`, labels: { cluster: name } },
      data: { [`MASTER_${name}-1`]: ip },
    },
  });
  await core().createNamespacedSecret({
    namespace,
    body: {
      metadata: { name: 'ssh-key-secret' },
      data: { id_rsa: Buffer.from(privateKey).toString('base64') },
    },
  });
}

/** Waits until the Software's Ready is decided (True or False) and returns the Software. */
const readyDecided = (namespace: string, name: string, timeoutMs = 240_000) =>
  waitFor(
    async () => {
      const software = await readSoftware(namespace, name);
      const ready = conditionOf(software, 'Ready');
      return ready && ready.status !== 'Unknown' && ready.reason !== 'ClusterNotReady' ? software : undefined;
    },
    { what: `Ready of ${namespace}/${name} decided`, timeoutMs, intervalMs: 500 },
  );

const jobCondition = (job: V1Job, type: string) =>
  job.status?.conditions?.find((c) => c.type === type && c.status === 'True');

beforeAll(async () => {
  for (const bundle of ['software-install.mjs', 'software-install-job.mjs'])
    if (!existsSync(join(repoRoot(), 'dist/bundle', bundle)))
      throw new Error(`dist/bundle/${bundle} is missing: run npm run build first`);
  cluster = await startStackCluster({ fallBack: false });
  const attachment = cluster.nodeNetwork!;
  // The Debian host on this machine's end of the node's link (what the node routes its pods to),
  // the silent one in a lab namespace of its own on the lab bridge; one SSH port for both.
  debian = await startDebianHosts({ count: 1, addresses: [cluster.kubeletNode!.addresses.hostIp] });
  network = await createLabNetwork(attachment, [241]);
  const [lab] = network.hosts as [LabNetwork['hosts'][0]];
  silent = await startSshHosts({
    count: 1,
    addresses: [lab.ip],
    netns: [lab.netns],
    port: debian.port,
    username: 'root',
    behaviours: [{ kind: 'hang', seconds: 600 }],
  });
  realNamespace = await createNamespace(cluster.kubeConfig, uniqueNamespaceName('software-node'));
  stuckNamespace = await createNamespace(cluster.kubeConfig, uniqueNamespaceName('software-node-stuck'));
  // Tenant namespaces may enforce Pod Security `restricted` (contract section 12): the install
  // Job's pods must be admitted there.
  for (const namespace of [realNamespace, stuckNamespace]) {
    const read = await core().readNamespace({ name: namespace });
    await core().replaceNamespace({
      name: namespace,
      body: {
        ...read,
        metadata: {
          ...read.metadata,
          labels: { ...read.metadata?.labels, 'pod-security.kubernetes.io/enforce': 'restricted' },
        },
      },
    });
  }
  await readyCluster(realNamespace, 'real', debian.hosts[0]!.ip, debian.privateKey);
  await readyCluster(stuckNamespace, 'stuck', lab.ip, silent.privateKey);
  // software-install itself runs in this process (as the tests' functions do); its Jobs on the node.
  harness = new ChainHarness(
    cluster.kubeConfig,
    {
      // The install Job's image as the real node holds it.
      ...cluster.functionsEnv,
      SSH_USER: 'root',
      SSH_PORT: String(debian.port),
      INSTALL_ATTEMPTS: '1',
      INSTALL_JOB_DEADLINE_SECONDS: String(deadlineSeconds),
      SWEEP_NAMESPACES: `${realNamespace},${stuckNamespace}`,
      // This suite waits for the Jobs itself and plays the Software's update where it says so.
    },
    { followInstallJobs: false },
  );
  await harness.start([softwareInstall]);
}, 600_000);

afterAll(async () => {
  await harness?.stop();
  await silent?.stopAll();
  await debian?.stopAll();
  await network?.remove();
  await cluster?.stop();
}, 180_000);

describe('the install Job on the node', () => {
  it('Software applied -> Job -> pod on the node -> real apt over SSH -> Ready, announced once', async () => {
    const software = await createSoftware(realNamespace, 'tools', 'real', ['tree']);
    const [delivery] = await harness.publish(sourceEvent('add', software as never));
    expect(delivery?.status).toBe(204);

    const installed = await readyDecided(realNamespace, 'tools');
    expect(conditionOf(installed, 'Ready')).toMatchObject({ status: 'True', reason: 'Installed' });
    expect(installed.status?.hosts).toEqual([
      expect.objectContaining({ node: 'real-1', ip: debian.hosts[0]!.ip, exitCode: 0 }),
    ]);
    expect((await debian.hosts[0]!.shell('command -v tree')).code).toBe(0);

    // The real Job controller saw its pod succeed, on our node.
    const jobName = installed.status?.installJob ?? '';
    expect(jobName).toBe('tools-install-1');
    const job = await waitFor(
      async () => {
        const read = await batch().readNamespacedJob({ name: jobName, namespace: realNamespace });
        return jobCondition(read, 'Complete') ? read : undefined;
      },
      { what: `Job ${jobName} Complete`, timeoutMs: 60_000, intervalMs: 500 },
    );
    expect(job.status?.succeeded).toBe(1);
    const pods = await core().listNamespacedPod({
      namespace: realNamespace,
      labelSelector: `job-name=${jobName}`,
    });
    expect(pods.items.map((p) => [p.spec?.nodeName, p.spec?.serviceAccountName, p.status?.phase])).toEqual([
      [cluster.kubeletNode!.name, 'tools-installer', 'Succeeded'],
    ]);

    // Its status write comes back as the Software's update: software.installed, once.
    const [announced] = await harness.publish(sourceEvent('update', installed as never));
    expect(announced?.reply?.type).toBe(EventTypes.softwareInstalled);
    const [again] = await harness.publish(
      sourceEvent('update', (await readSoftware(realNamespace, 'tools')) as never),
    );
    expect(again?.reply).toBeUndefined();
  }, 360_000);

  it('a Job past its deadline: the sweep fails the Software (InstallJobFailed); the retry annotation runs it again', async () => {
    const software = await createSoftware(stuckNamespace, 'tools', 'stuck', ['htop']);
    expect((await harness.publish(sourceEvent('add', software as never)))[0]?.status).toBe(204);

    // The real Job controller ends the Job at its deadline; the node kills the pod's process.
    const job = await waitFor(
      async () => {
        const read = await batch().readNamespacedJob({ name: 'tools-install-1', namespace: stuckNamespace });
        return jobCondition(read, 'Failed') ? read : undefined;
      },
      { what: 'Job tools-install-1 Failed', timeoutMs: (deadlineSeconds + 120) * 1000, intervalMs: 1000 },
    );
    expect(jobCondition(job, 'Failed')).toMatchObject({ reason: 'DeadlineExceeded' });
    expect(job.spec?.activeDeadlineSeconds).toBe(deadlineSeconds);
    // Still Installing: the pod died before it could record anything.
    expect(conditionOf(await readSoftware(stuckNamespace, 'tools'), 'Installed')).toMatchObject({
      status: 'Unknown',
      reason: 'Installing',
    });

    expect((await harness.deliver('software-install', pingEvent())).status).toBe(204);
    const failed = await readSoftware(stuckNamespace, 'tools');
    for (const type of ['Installed', 'Ready'])
      expect(conditionOf(failed, type)).toMatchObject({ status: 'False', reason: 'InstallJobFailed' });
    expect(conditionOf(failed, 'Ready')?.message).toBe(
      `Install Job tools-install-1 ran past its deadline of ${deadlineSeconds} s without recording an outcome ` +
        '(DeadlineExceeded: Job was active longer than specified deadline); ' +
        `see kubectl -n ${stuckNamespace} logs job/tools-install-1`,
    );
    const sent = harness.collector.drain().map((e) => e.type);
    expect(sent).toEqual([EventTypes.softwareFailed]);
    const warnings = await core().listNamespacedEvent({
      namespace: stuckNamespace,
      fieldSelector: 'involvedObject.name=tools,reason=InstallJobFailed',
    });
    expect(warnings.items.map((e) => e.type)).toEqual(['Warning']);
    // A failure stays (contract section 11): the next sweep and a replay change nothing.
    expect((await harness.deliver('software-install', pingEvent())).status).toBe(204);
    expect((await harness.publish(sourceEvent('update', failed as never)))[0]?.reply).toBeUndefined();
    expect(harness.collector.drain()).toEqual([]);

    // The host answers again; the user asks for a retry: a new run of the generation, installed.
    await silent.setBehaviour(silent.hosts[0]!, { kind: 'succeed' });
    const annotated = (await custom().patchNamespacedCustomObject(
      {
        ...bpaGroup,
        plural: 'softwares',
        namespace: stuckNamespace,
        name: 'tools',
        body: { metadata: { annotations: { 'bpa.akraino.org/retry': '1' } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )) as StoredSoftware;
    const [retry] = await harness.publish(sourceEvent('update', annotated as never));
    // The whole answer when it is not 204: its body says why the retry was refused.
    expect(
      retry?.status === 204 ? 204 : { status: retry?.status, body: retry?.body, reply: retry?.reply },
    ).toBe(204);
    const retried = await readyDecided(stuckNamespace, 'tools');
    expect(conditionOf(retried, 'Ready')).toMatchObject({ status: 'True', reason: 'Installed' });
    expect(retried.status?.installJob).toMatch(/^tools-install-1-[0-9a-f]{8}$/);
    expect(silent.hosts[0]!.commands().at(-1)).toContain("'htop'");
  }, 480_000);
});
