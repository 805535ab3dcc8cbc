/**
 * The chain on real Knative Eventing, driven only through the API server (issue 14 item 4): the
 * suite creates Provisionings, BareMetalHosts and labels with kubectl and client-node and reads
 * their status; every event comes from Knative's own ApiServerSources and PingSource, goes
 * through Knative's MT channel broker and the Triggers of manifests/, and reaches the functions
 * as pods. Nothing here posts to a function or to the broker.
 *
 * Real: Knative Eventing knative.dev/eventing v0.49.2 (controller, webhook, MT channel broker,
 * in-memory channel, ApiServerSource adapters, mtping: built from its Go modules and installed
 * from its own config/, local/knative/install.ts); kube-apiserver, etcd and Kubernetes' own
 * controllers (the Job controller makes the KUD Job's pod, the Deployment controller the
 * functions' pods); the functions' bundles (dist/bundle) running as pods, applied from
 * manifests/ as `kubectl apply -k` renders them.
 * Imitated: the node (local/node, OUR IMITATION of a kubelet: a pod is a local process in a
 * network namespace); the Knative Services become Deployments and Services through the local
 * Serving overlay (Serving cannot run here, docs/knative.md); the KUD installer is the test image
 * bpa.local/test/kud-waits:1 (test/fixtures/node/images.yaml), which waits until the suite
 * releases it with the exit code it chooses; the hosts are BareMetalHosts with inspected NICs and
 * an ISC lease file written by the suite (no dhcpd, no hardware).
 *
 * Starts its own cluster: the manifests' ApiServerSources watch every namespace, so on the shared
 * test cluster the functions would act on other suites' Provisionings. Needs root, Knative's
 * binaries (engines/build.sh knative) and `npm run build`.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { BatchV1Api, CoreV1Api } from '@kubernetes/client-node';
import { z } from 'zod';
import { createNamespace, uniqueNamespaceName, waitFor } from '../../../local/control-plane/index.js';
import { repoRoot } from '../../../local/control-plane/repo-root.js';
import { startKnativeStack, type KnativeStack } from '../../../local/knative/stack.js';
import { renderIscLeaseFile } from '../../../local/lab/lease-file.js';
import { startStackCluster, type StackCluster } from '../../../local/stack/cluster.js';
import { kudMultiClusterPath } from '../../../shared/core/kud-job.js';
import { inventoryConfigMapName, kudJobName } from '../../../shared/core/names.js';
import { describeOnKnative } from '../../support/knative.js';
import { createKudSshKeySecret, kudTestImage } from '../../support/node.js';
import {
  conditionOf,
  createBareMetalHost,
  provisioningObject,
  readProvisioning,
} from '../functions/support/fixtures.js';

const run = promisify(execFile);

let cluster: StackCluster;
let stack: KnativeStack;
let namespace: string;
let workDir: string;
let leaseFile: string;

const core = () => cluster.kubeConfig.makeApiClient(CoreV1Api);
const batch = () => cluster.kubeConfig.makeApiClient(BatchV1Api);

/** The hosts of the suite: the lease file gives the IP of `late`, the NICs that of the others. */
const hosts = {
  late: { label: 'late-1', mac: '52:54:00:c4:00:01', ip: '10.20.0.1' },
  steady: { label: 'steady-1', mac: '52:54:00:c4:00:02', ip: '10.20.0.2' },
  doomed: { label: 'doomed-1', mac: '52:54:00:c4:00:03', ip: '10.20.0.3' },
} as const;

/** The lease file's text: an active lease for each of `names`. */
const leasesFor = (...names: (keyof typeof hosts)[]) =>
  renderIscLeaseFile(
    names.map((name) => ({ ...hosts[name], role: 'master', bmhName: `${name}-host`, inLeaseFile: true })),
  );

/** `kubectl` against the suite's cluster; resolves with stdout. */
async function kubectl(args: string[], input?: string): Promise<string> {
  const child = run('kubectl', ['--kubeconfig', cluster.kubeconfigPath, ...args], {
    encoding: 'utf8',
    maxBuffer: 8 * 1024 * 1024,
  });
  if (input !== undefined) {
    child.child.stdin?.end(input);
  }
  return (await child).stdout;
}

/** `kubectl apply -f -` of a Provisioning, as a user would. */
const applyProvisioning = (object: ReturnType<typeof provisioningObject>) =>
  kubectl(['apply', '-f', '-'], JSON.stringify(object));

/** Waits until the Provisioning's condition `type` has `status` for its current generation. */
function waitForCondition(name: string, type: string, status: string, timeoutMs: number) {
  return waitFor(
    async () => {
      const provisioning = await readProvisioning(cluster.kubeConfig, namespace, name);
      const condition = conditionOf(provisioning, type);
      const current =
        condition?.observedGeneration === undefined ||
        condition.observedGeneration === provisioning.metadata.generation;
      return condition?.status === status && current ? provisioning : undefined;
    },
    { what: `${type} ${status} on Provisioning ${namespace}/${name}`, timeoutMs, intervalMs: 1000 },
  );
}

/** Ends kud-waits' installer of `clusterName` with `exitCode` (the release file on the node's hostPath). */
async function releaseKudJob(clusterName: string, exitCode: 0 | 1) {
  const dir = join(cluster.node!.workDir, 'host-paths', kudMultiClusterPath, '.test-release', namespace);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, clusterName), `${exitCode}\n`);
}

const eventLineSchema = z.looseObject({
  msg: z.string(),
  ce_type: z.string(),
  namespace: z.string().optional(),
  name: z.string().optional(),
  status: z.number().optional(),
});

/**
 * The events host-lookup's pod handled for Provisioning `name` whose CloudEvent type ends in
 * `.<verb>` (the ApiServerSource's dev.knative.apiserver.resource.<verb>): its `event` log lines.
 */
async function hostLookupEvents(name: string, verb: string) {
  return (await hostLookupLog())
    .split('\n')
    .flatMap((line) => {
      try {
        const parsed = eventLineSchema.safeParse(JSON.parse(line));
        return parsed.success ? [parsed.data] : [];
      } catch {
        return [];
      }
    })
    .filter(
      (l) =>
        l.msg === 'event' && l.ce_type.endsWith(`.${verb}`) && l.namespace === namespace && l.name === name,
    );
}

/** What the running pod of the manifests' Deployment `service` logged so far, through the API. */
async function podLog(service: string): Promise<string> {
  const pods = await core().listNamespacedPod({
    namespace: 'bpa-system',
    labelSelector: `serving.knative.dev/service=${service}`,
  });
  const pod = pods.items.find((p) => p.status?.phase === 'Running');
  if (!pod?.metadata?.name) throw new Error(`no running ${service} pod`);
  return core().readNamespacedPodLog({ namespace: 'bpa-system', name: pod.metadata.name });
}
const hostLookupLog = () => podLog('host-lookup');

const provisioningFor = (name: keyof typeof hosts) =>
  provisioningObject({
    name,
    namespace,
    cluster: name,
    masters: [{ label: hosts[name].label, mac: hosts[name].mac }],
  });

const jobsOf = async (clusterName: string) =>
  (await batch().listNamespacedJob({ namespace, labelSelector: `cluster=${clusterName}` })).items;
const inventoriesOf = async (clusterName: string) =>
  (await core().listNamespacedConfigMap({ namespace })).items.filter(
    (c) => c.metadata?.name === inventoryConfigMapName(clusterName),
  );

describeOnKnative('the chain on real Knative Eventing (its own cluster)', () => {
  beforeAll(async () => {
    for (const bundle of ['host-lookup.mjs', 'inventory-render.mjs', 'kud-job-launch.mjs'])
      if (!existsSync(join(repoRoot(), 'dist/bundle', bundle)))
        throw new Error(`dist/bundle/${bundle} is missing: run npm run build first`);
    cluster = await startStackCluster({
      fallBack: false,
      extraImageMaps: [join(repoRoot(), 'test/fixtures/node/images.yaml')],
    });
    namespace = await createNamespace(cluster.kubeConfig, uniqueNamespaceName('kchain'));
    await createKudSshKeySecret(cluster.kubeConfig, namespace);
    workDir = await mkdtemp(join(tmpdir(), 'bpa-kchain-'));
    leaseFile = join(workDir, 'dhcpd.leases');
    // Only `late` has a lease: its BareMetalHost, created later, has no IP on its NIC.
    await writeFile(leaseFile, leasesFor('late'));
    for (const name of ['steady', 'doomed'] as const)
      await createBareMetalHost(cluster.kubeConfig, {
        name: `${name}-host`,
        namespace,
        bootMac: hosts[name].mac,
        nics: [{ name: 'eth0', mac: hosts[name].mac, ip: hosts[name].ip }],
      });
    stack = await startKnativeStack({
      kubeConfig: cluster.kubeConfig,
      config: {
        BMH_NAMESPACE: namespace,
        LEASES_SOURCE: leaseFile,
        KUD_IMAGE: kudTestImage.waits,
        SWEEP_NAMESPACES: namespace,
      },
      log: (line) => process.stderr.write(`[kchain] ${line}\n`),
      timeoutMs: 600_000,
    });
  }, 1_200_000);

  afterAll(async () => {
    await cluster?.stop();
    if (workDir) await rm(workDir, { recursive: true, force: true });
  }, 180_000);

  it('runs on Knative: every Broker, Trigger, source and SinkBinding of manifests/ is Ready', () => {
    expect(stack.ready).toEqual(
      expect.arrayContaining([
        'Broker bpa-system/default',
        'ApiServerSource bpa-system/bpa-resources',
        expect.stringMatching(/^PingSource bpa-system\//),
        expect.stringMatching(/^Trigger bpa-system\//),
        expect.stringMatching(/^SinkBinding bpa-system\//),
      ]),
    );
  });

  it('a MAC no BareMetalHost has: HostsResolved False HostNotFound; once the host appears the chain proceeds to JobLaunched', async () => {
    await applyProvisioning(provisioningFor('late'));
    const message = `Host with MAC Address ${hosts.late.mac} not found`;
    const failed = await waitForCondition('late', 'HostsResolved', 'False', 120_000);
    expect(conditionOf(failed, 'HostsResolved')).toMatchObject({ reason: 'HostNotFound', message });
    expect(conditionOf(failed, 'Ready')).toMatchObject({ status: 'False', reason: 'HostNotFound', message });
    const warnings = await core().listNamespacedEvent({
      namespace,
      fieldSelector: 'involvedObject.name=late,reason=HostNotFound',
    });
    expect(warnings.items.map((e) => [e.type, e.message])).toEqual([['Warning', message]]);
    expect(await jobsOf('late')).toEqual([]);

    // The host appears (no IP on its NIC: the lease file has it); no event names the
    // Provisioning, so the sweep (Knative's PingSource, every minute) re-drives it.
    await createBareMetalHost(cluster.kubeConfig, {
      name: 'late-host',
      namespace,
      bootMac: hosts.late.mac,
      nics: [],
    });
    const launched = await waitForCondition('late', 'JobLaunched', 'True', 180_000);
    expect(conditionOf(launched, 'HostsResolved')).toMatchObject({ status: 'True' });
    expect(launched.status?.nodes).toEqual([
      expect.objectContaining({ label: hosts.late.label, mac: hosts.late.mac, ip: hosts.late.ip }),
    ]);
    const inventory = await core().readNamespacedConfigMap({
      name: inventoryConfigMapName('late'),
      namespace,
    });
    expect(inventory.data?.['hosts.ini']).toContain(hosts.late.ip);
    const [job] = await jobsOf('late');
    expect(job?.metadata?.name).toBe(kudJobName('late'));
    expect(job?.spec?.template.spec?.containers[0]?.image).toBe(kudTestImage.waits);
  }, 420_000);

  it('the same spec applied again and a label-only update: no second Job, no second inventory', async () => {
    const object = provisioningFor('steady');
    await applyProvisioning(object);
    const launched = await waitForCondition('steady', 'JobLaunched', 'True', 180_000);
    const [job] = await jobsOf('steady');
    const [inventory] = await inventoriesOf('steady');
    expect(job?.metadata?.name).toBe(kudJobName('steady'));
    expect(inventory).toBeDefined();

    // Unchanged: the API server writes nothing. A label: an update event through the
    // ApiServerSource, the broker and host-lookup's Trigger, generation unchanged.
    expect(await applyProvisioning(object)).toMatch(/unchanged/);
    const updatesBefore = (await hostLookupEvents('steady', 'update')).length;
    await kubectl(['-n', namespace, 'label', 'provisioning', 'steady', 'touched=yes']);
    const updates = await waitFor(
      async () => {
        const handled = await hostLookupEvents('steady', 'update');
        return handled.length > updatesBefore ? handled : undefined;
      },
      { what: 'host-lookup to handle the update of steady', timeoutMs: 120_000, intervalMs: 1000 },
    );
    // Answered without a reply: nothing to re-drive for an unchanged generation.
    expect(updates.at(-1)).toMatchObject({ status: 204 });
    // And one sweep (every minute) after it: nothing new either.
    await new Promise((resolve) => setTimeout(resolve, 70_000));

    const after = await readProvisioning(cluster.kubeConfig, namespace, 'steady');
    expect(after.metadata.generation).toBe(launched.metadata.generation);
    expect(conditionOf(after, 'JobLaunched')).toMatchObject({ status: 'True' });
    expect((await jobsOf('steady')).map((j) => j.metadata?.uid)).toEqual([job?.metadata?.uid]);
    expect((await inventoriesOf('steady')).map((c) => c.metadata?.uid)).toEqual([inventory?.metadata?.uid]);
  }, 420_000);

  it('a failing KUD Job: KudInstalled and Ready False (JobFailed) with the contract message, a Warning Event', async () => {
    await applyProvisioning(provisioningFor('doomed'));
    await waitForCondition('doomed', 'JobLaunched', 'True', 180_000);
    await releaseKudJob('doomed', 1);
    const failed = await waitForCondition('doomed', 'KudInstalled', 'False', 180_000);
    const [pod] = (await core().listNamespacedPod({ namespace, labelSelector: 'job-name=kud-doomed' })).items;
    expect(pod?.metadata?.name).toMatch(/^kud-doomed-[a-z0-9]{5}$/);
    const message = `Job Failed, KUD not installed in Cluster doomed, check pod logs (pod ${pod?.metadata?.name})`;
    expect(conditionOf(failed, 'KudInstalled')).toMatchObject({ status: 'False', message });
    const ready = await waitForCondition('doomed', 'Ready', 'False', 60_000);
    expect(conditionOf(ready, 'Ready')).toMatchObject({ reason: 'JobFailed', message });
    const [job] = await jobsOf('doomed');
    expect(job?.status?.conditions?.find((c) => c.type === 'Failed')).toMatchObject({
      status: 'True',
      reason: 'BackoffLimitExceeded',
    });
    const events = await core().listNamespacedEvent({
      namespace,
      fieldSelector: 'involvedObject.name=doomed,reason=JobFailed',
    });
    expect(events.items.map((e) => [e.type, e.message])).toEqual([['Warning', message]]);
    await expect(
      core().readNamespacedConfigMap({ name: 'doomed-configmap', namespace }),
    ).rejects.toMatchObject({
      code: 404,
    });
  }, 420_000);
});
