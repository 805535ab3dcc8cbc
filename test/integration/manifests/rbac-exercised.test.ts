/**
 * The RBAC table proven by running the functions under it. The manifests' ServiceAccounts,
 * ClusterRoles and ClusterRoleBindings are applied for real, and the test's namespace onboarded
 * (manifests/tenant: it is the tenant's, the functions' and BMH_NAMESPACE at once); each function gets a token of its
 * own ServiceAccount (TokenRequest) and runs behind its real HTTP server with nothing else. The
 * test drives every path that needs a permission: a Software waiting for its cluster, the
 * bare-metal chain to cluster.ready and the install over real sshd, a Virtlet cluster (VM pods
 * listed), a KubeVirt cluster (VMIs listed, claimed, released; KubeVirt's real CRD), a spec change that repeats every Event (patched), an inventory change that replaces
 * the finished Job and rewrites both ConfigMaps, and each function's sweep. A missing rule is a
 * 403 and fails a step; at the end, the calls each function made (recorded per request, as the
 * authorizer sees them) must be exactly its rows of the table, so a rule nothing uses fails too.
 * The KUD Jobs run on the run's node and end by the real Job controller: their image's installer
 * (kud-waits, test/fixtures/node/kud-installers) exits 0 when the test releases it, so the sweep
 * sees a Job that really runs. Nothing writes a Job's status but the Job controller.
 *
 * software-install takes the Job path (the only one, contract section 11): it creates the install
 * Job with its ServiceAccount, Role and RoleBinding (RBAC checks that it holds every rule it puts
 * into the Role), and the Job's code runs here as that ServiceAccount, so the Role is proven by
 * use too, and the grants software-install holds only to delegate (`delegated`) are made by it.
 * The install Job's code runs in this process, as its ServiceAccount (the node runs it as a pod
 * in test/integration/node/software-job.test.ts).
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import {
  BatchV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
} from '@kubernetes/client-node';
import type { CloudEvent } from 'cloudevents';
import { EventTypes } from '../../../shared/events/types.js';
import { definition as hostLookup } from '../../../functions/host-lookup/index.js';
import { definition as inventoryRender } from '../../../functions/inventory-render/index.js';
import { definition as kudJobLaunch } from '../../../functions/kud-job-launch/index.js';
import { definition as softwareInstall } from '../../../functions/software-install/index.js';
import type { FunctionDefinition } from '../../../shared/server/types.js';
import { useTestCluster } from '../../support/cluster.js';
import { apiCallOf, RecordingKubeConfig, type ApiCall } from '../../support/recording-kube-config.js';
import { asServiceAccount } from '../../support/service-account-kubeconfig.js';
import { startSshHosts, type SshHosts } from '../../support/sshd.js';
import { describeOnNode, kudTestImage, releaseKudJob, waitForJobEnd } from '../../support/node.js';
import { createVmPod } from '../../support/vm-namespace.js';
import { createVmi, fixtureVmis, installKubevirtCrd, readVmi } from '../../support/kubevirt.js';
import {
  ChainHarness,
  jobUpdateEvent,
  pingEvent,
  sourceEvent,
  type Delivery,
} from '../functions/support/chain-harness.js';
import {
  bpaGroup,
  conditionOf,
  createBareMetalHost,
  createProvisioning,
  provisioningObject,
  readProvisioning,
} from '../functions/support/fixtures.js';
import {
  allGrantsOf,
  calledGrants,
  permissionKey,
  permissionsOf,
  grantsAsRules,
  rbacTable,
  type Grant,
} from '../../unit/manifests/rbac-table.js';
import { applyRbac, deleteRbac, onboardForRbac, rbacObjectCount } from './rbac-install.js';
import { softwareInstallConfigSchema } from '../../../functions/software-install/config.js';
import {
  installerRole,
  installerServiceAccountName,
} from '../../../functions/software-install/install-job/job-objects.js';
import { runInstallJob } from '../../../functions/software-install/install-job/run.js';
import { createLogger } from '../../../shared/log.js';
import { publisherGenerationAnnotation } from '../../../shared/core/lifecycle-objects.js';
import { isStatus, waitFor } from '../../../local/control-plane/index.js';

const cluster = useTestCluster({ namespacePrefix: 'rbac-exercised' });

const functions = [hostLookup, inventoryRender, kudJobLaunch, softwareInstall] as FunctionDefinition<unknown>[];
type FunctionName = 'host-lookup' | 'inventory-render' | 'kud-job-launch' | 'software-install';

const masterMac = 'aa:bb:cc:00:0e:01';
const workerMac = 'aa:bb:cc:00:0e:02';
/** The image test's host of its own: one owner per host, and edge holds the two above. */
const imagedMac = 'aa:bb:cc:00:0e:03';

/** [target, HTTP status, reply type] of each delivery. */
const summary = (deliveries: Delivery[]) => deliveries.map((d) => [d.target, d.status, d.reply?.type]);

/**
 * client-node's Watch authenticates through applyToFetchOptions, which carries no URL, so the
 * recorder cannot see a watch request. host-lookup's BareMetalHost watch is inferred instead:
 * while it runs only the first of the bare-metal lookups here lists (functions/host-lookup/host-watch.ts);
 * refused, the first lookup lists twice (the watch's list, then its own) and every later one
 * lists again, no watch is added, and the table check fails.
 */
function withBareMetalHostWatch(calls: ApiCall[]): ApiCall[] {
  const lists = calls.filter((c) => c.resource === 'baremetalhosts' && c.verb === 'list');
  if (lists.length !== 1) return calls;
  return [...calls, { ...lists[0]!, verb: 'watch' }];
}

/**
 * The functions' own watches (shared/k8s/watched-objects.ts) are inferred the same way, from the
 * function's log: "<plural> watch started" (with the collection's path) is logged only once the
 * watch's list is in and its watch request answered 200, so the line proves both. Refused, the
 * line never comes, no watch is added, and the table check fails. The Provisioning watch is in
 * all namespaces by design (one per server): with its list, the only calls made there.
 */
function withOwnWatches(calls: ApiCall[], lines: readonly string[]): ApiCall[] {
  const watches = lines.flatMap((line) => {
    const parsed = JSON.parse(line) as { msg?: string; path?: string };
    if (!parsed.msg?.endsWith(' watch started') || !parsed.path) return [];
    const { verb: _list, ...where } = apiCallOf('GET', `https://api.invalid${parsed.path}`);
    return [{ ...where, verb: 'watch' }];
  });
  return [...calls, ...watches];
}
const isProvisioningWatch = (call: ApiCall) =>
  call.group === 'bpa.akraino.org' &&
  call.resource === 'provisionings' &&
  call.namespace === undefined &&
  (call.verb === 'list' || call.verb === 'watch');

/** The permission an observed call needs, named the way the table names it. */
function permissionOfCall(call: ApiCall, grants: Grant[]): string {
  const named = grants.some((g) => g.group === call.group && g.resource === call.resource && g.resourceNames);
  return permissionKey({ ...call, ...(named ? { resourceName: call.name } : { resourceName: undefined }) });
}

describeOnNode('each function under its own ServiceAccount', () => {
  let prefix = '';
  let lab: SshHosts;
  /** The whole chain: every function's server, each with its own KubeConfig. */
  let chain: ChainHarness;
  const perFunction = new Map<
    FunctionName,
    { harness: ChainHarness; kubeConfig: RecordingKubeConfig; lines: string[] }
  >();
  const admin = () => cluster.kubeConfig;
  const core = () => admin().makeApiClient(CoreV1Api);
  const custom = () => admin().makeApiClient(CustomObjectsApi);
  // A JSON patch: a merge patch would drop the `- <label>:` (null) worker entries.
  const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);

  /** Sets spec fields (as a user's kubectl edit would), so the generation moves on. */
  const patchSpec = async (plural: 'provisionings' | 'softwares', name: string, spec: Record<string, unknown>) =>
    (await custom().patchNamespacedCustomObject(
      {
        ...bpaGroup,
        plural,
        namespace: cluster.namespace,
        name,
        body: Object.entries(spec).map(([field, value]) => ({ op: 'add', path: `/spec/${field}`, value })),
      },
      jsonPatch,
    )) as { apiVersion: string; kind: string; metadata: { name: string; namespace: string; generation: number } };
  const readSoftware = async (name: string) =>
    (await custom().getNamespacedCustomObject({
      ...bpaGroup,
      plural: 'softwares',
      namespace: cluster.namespace,
      name,
    })) as Parameters<typeof conditionOf>[0] & { metadata: { generation: number } };
  /** count of the Event about `object` with `reason` (0: none). */
  const eventCount = async (object: string, reason: string) => {
    const events = await core().listNamespacedEvent({ namespace: cluster.namespace });
    const matching = events.items.filter((e) => e.involvedObject.name === object && e.reason === reason);
    expect({ object, reason, events: matching.length }).toEqual({ object, reason, events: 1 });
    return matching[0]?.count ?? 0;
  };
  /** The install Jobs' ServiceAccounts, by Software, and the calls they made. */
  const installJobs = new Map<string, RecordingKubeConfig>();
  let functionsEnv: Record<string, string> = {};
  /** What the install Job's pod would do (no Job controller or node here): its code, as its ServiceAccount. */
  const runInstallJobOf = async (software: string) => {
    const serviceAccount = installerServiceAccountName(software);
    const kubeConfig =
      installJobs.get(software) ??
      (await asServiceAccount(admin(), cluster.namespace, serviceAccount, new RecordingKubeConfig()));
    installJobs.set(software, kubeConfig);
    const outcome = await runInstallJob(
      {
        kubeConfig,
        config: softwareInstallConfigSchema.parse(functionsEnv),
        log: createLogger({ sink: () => undefined, level: 'error' }),
        instance: `${software}-install`,
      },
      { namespace: cluster.namespace, name: software, generation: (await readSoftware(software)).metadata.generation },
    );
    return outcome.kind;
  };
  const deliverCollected = async (from: FunctionName): Promise<Delivery[]> => {
    const collected = perFunction.get(from)?.harness.collector.drain() ?? [];
    const made: Delivery[] = [];
    for (const event of collected) made.push(...(await chain.publish(event)));
    return made;
  };
  /** The Job, or undefined once it is gone (404). */
  const jobOrGone = (name: string) =>
    admin()
      .makeApiClient(BatchV1Api)
      .readNamespacedJob({ name, namespace: cluster.namespace })
      .catch((error: unknown) => (isStatus(error, 404) ? undefined : Promise.reject(error)));
  /**
   * Drives the kubeconfig publisher of `generation` to its end as the Job source and the sweep
   * would: a ping while it is not there yet (an older one still being deleted), its update event
   * once it has ended; until KubeconfigPublished is decided for that generation.
   */
  const publishKubeconfig = (generation: number) =>
    waitFor(
      async () => {
        const publisher = await jobOrGone('kud-edge-1-kubeconfig');
        const ofGeneration =
          publisher?.metadata?.annotations?.[publisherGenerationAnnotation] === String(generation);
        const ended = publisher?.status?.conditions?.some(
          (c) => ['Complete', 'Failed'].includes(c.type) && c.status === 'True',
        );
        if (ofGeneration && ended)
          await chain.publish(await jobUpdateEvent(admin(), cluster.namespace, 'kud-edge-1-kubeconfig'));
        else if (!ofGeneration) await chain.deliver('kud-job-launch', pingEvent());
        const published = conditionOf(await readProvisioning(admin(), cluster.namespace, 'edge'), 'KubeconfigPublished');
        return published?.observedGeneration === generation && published.status !== 'Unknown' ? published : undefined;
      },
      { what: `KubeconfigPublished of edge decided for generation ${generation}`, timeoutMs: 120_000, intervalMs: 500 },
    );

  beforeAll(async () => {
    const namespace = cluster.namespace;
    prefix = `${namespace}-`;
    // The shipped RBAC, with BMH_NAMESPACE and one VM namespace (both this one) added through
    // the overlay docs/deploy.md shows: the VM Role is what an operator adds, and all it needs.
    expect(await applyRbac(cluster.kubeconfigPath, namespace, prefix, [namespace])).toBe(
      rbacObjectCount([namespace]),
    );
    // The namespace is a tenant's too: onboarded as an operator does (manifests/tenant).
    await onboardForRbac(cluster.kubeconfigPath, namespace, prefix, namespace);

    lab = await startSshHosts({ count: 2 });
    const [master, worker] = lab.hosts;
    if (!master || !worker) throw new Error('startSshHosts gave fewer than 2 hosts');
    await core().createNamespacedSecret({
      namespace,
      body: {
        metadata: { name: 'ssh-key-secret' },
        data: {
          id_rsa: Buffer.from(lab.privateKey).toString('base64'),
          // The KUD Job mounts both keys; the node starts no pod whose Secret lacks one.
          'id_rsa.pub': Buffer.from(lab.publicKey).toString('base64'),
        },
      },
    });
    // The master's IP comes from a lease file published as a ConfigMap, the worker's from its NIC.
    await core().createNamespacedConfigMap({
      namespace,
      body: {
        metadata: { name: 'dhcp-leases' },
        data: {
          'dhcpd.leases': `lease ${master.ip} {\n  binding state active;\n  hardware ethernet ${masterMac};\n}\n`,
        },
      },
    });
    // A claim of cluster edge-1 left by a Provisioning that is gone: host-lookup takes it over.
    await admin()
      .makeApiClient(CoordinationV1Api)
      .createNamespacedLease({
        namespace,
        body: {
          metadata: {
            name: 'cluster-edge-1',
            labels: { 'app.kubernetes.io/managed-by': 'bpa-functions' },
            annotations: { 'bpa.akraino.org/holder-uid': 'uid-of-a-deleted-provisioning' },
          },
          spec: { holderIdentity: `${namespace}/deleted` },
        },
      });
    await createBareMetalHost(admin(), { name: 'bmh-master', namespace, bootMac: masterMac });
    await createBareMetalHost(admin(), {
      name: 'bmh-worker',
      namespace,
      bootMac: workerMac,
      nics: [{ name: 'eth0', mac: workerMac, ip: worker.ip }],
    });
    await createBareMetalHost(admin(), {
      name: 'bmh-imaged',
      namespace,
      bootMac: imagedMac,
      nics: [{ name: 'eth0', mac: imagedMac, ip: '10.14.0.3' }],
    });

    const env = {
      BMH_NAMESPACE: namespace,
      VM_NAMESPACES: namespace,
      // The install namespace here (the Roles are rendered into it): cluster-name claims.
      FUNCTIONS_NAMESPACE: namespace,
      SWEEP_NAMESPACES: namespace,
      LEASES_SOURCE: `configmap:${namespace}/dhcp-leases/dhcpd.leases`,
      SSH_USER: lab.username,
      SSH_PORT: String(lab.port),
      SSH_CONNECT_TIMEOUT_SECONDS: '10',
      SSH_TIMEOUT_SECONDS: '30',
      KUD_IMAGE: kudTestImage.waits,
      // The install Job's pod must not race the in-process run below (which proves its Role):
      // an image the node does not map leaves it waiting (ErrImageNeverPull).
      INSTALL_JOB_IMAGE: 'bpa.local/test/not-mapped:1',
    };
    functionsEnv = env;
    chain = new ChainHarness(admin(), {}, { followInstallJobs: false });
    for (const definition of functions) {
      const name = definition.name as FunctionName;
      const serviceAccount = `${prefix}${rbacTable[name]?.serviceAccount}`;
      const kubeConfig = await asServiceAccount(admin(), namespace, serviceAccount, new RecordingKubeConfig());
      // The install Job's pod never starts here (its image is not mapped): nothing to wait for.
      const lines: string[] = [];
      const log = createLogger({ level: 'info', sink: (line) => void lines.push(line) });
      const harness = new ChainHarness(kubeConfig, env, { followInstallJobs: false, log });
      await harness.start([definition]);
      perFunction.set(name, { harness, kubeConfig, lines });
      // One router over every server, so a reply goes on to the next function as the broker would.
      for (const [serverName, server] of harness.servers) chain.servers.set(serverName, server);
    }
  }, 180_000);

  afterAll(async () => {
    for (const { harness } of perFunction.values()) await harness.stop();
    await lab?.stopAll();
    if (prefix) await deleteRbac(cluster.kubeconfigPath, prefix);
  });

  it('runs software-install for a Software whose cluster is not ready yet', async () => {
    const software = await custom().createNamespacedCustomObject({
      ...bpaGroup,
      plural: 'softwares',
      namespace: cluster.namespace,
      body: {
        apiVersion: 'bpa.akraino.org/v1alpha1',
        kind: 'Software',
        metadata: { name: 'tools', namespace: cluster.namespace, labels: { cluster: 'edge-1' } },
        spec: { masterSoftware: ['htop'], workerSoftware: ['jq'] },
      },
    });
    expect(summary(await chain.publish(sourceEvent('add', software as never)))).toEqual([
      ['software-install', 204, undefined],
    ]);
    expect(conditionOf(await readSoftware('tools'), 'Ready')).toMatchObject({
      status: 'False',
      reason: 'ClusterNotReady',
    });
    // A spec change of a Software still waiting repeats its Event (patched: count 2).
    const idle = await custom().createNamespacedCustomObject({
      ...bpaGroup,
      plural: 'softwares',
      namespace: cluster.namespace,
      body: {
        apiVersion: 'bpa.akraino.org/v1alpha1',
        kind: 'Software',
        metadata: { name: 'idle', namespace: cluster.namespace, labels: { cluster: 'not-provisioned' } },
        spec: { masterSoftware: ['htop'] },
      },
    });
    expect(summary(await chain.publish(sourceEvent('add', idle as never)))).toEqual([
      ['software-install', 204, undefined],
    ]);
    const changed = await patchSpec('softwares', 'idle', { masterSoftware: ['htop', 'jq'] });
    expect(summary(await chain.publish(sourceEvent('update', changed)))).toEqual([
      ['software-install', 204, undefined],
    ]);
    expect(await eventCount('idle', 'ClusterNotReady')).toBe(2);
  });

  it('runs the bare-metal chain to a ready cluster and the install over SSH', async () => {
    const namespace = cluster.namespace;
    const created = await createProvisioning(
      admin(),
      provisioningObject({
        name: 'edge',
        namespace,
        cluster: 'edge-1',
        masters: [{ label: 'master-1', mac: masterMac }],
        workers: [{ label: 'worker-1', mac: workerMac }],
      }),
    );
    expect(summary(await chain.publish(sourceEvent('add', created)))).toEqual([
      ['host-lookup', 200, EventTypes.hostsResolved],
      ['inventory-render', 200, EventTypes.inventoryRendered],
      ['kud-job-launch', 200, EventTypes.kudJobLaunched],
    ]);
    // The Job controller's part (the test releases the installer); then the Job source's update event.
    await releaseKudJob(namespace, 'edge-1', 0);
    expect((await waitForJobEnd(admin(), namespace, 'kud-edge-1')).ended).toMatchObject({ type: 'Complete' });
    expect(summary(await chain.publish(await jobUpdateEvent(admin(), namespace, 'kud-edge-1')))).toEqual([
      ['kud-job-launch', 200, EventTypes.clusterReady],
      ['software-install', 204, undefined],
    ]);
    // software-install created the install Job; its pod's work, then its status write's update event.
    await admin().makeApiClient(BatchV1Api).readNamespacedJob({ name: 'tools-install-1', namespace });
    expect(await runInstallJobOf('tools')).toBe('installed');
    expect(summary(await chain.publish(sourceEvent('update', (await readSoftware('tools')) as never)))).toEqual([
      ['software-install', 200, EventTypes.softwareInstalled],
    ]);
    // The kubeconfig publisher (Secret, ServiceAccount, Role, RoleBinding, Job) was created under
    // kud-job-launch's own RBAC, including the Role the escalation check guards.
    const publisher = await admin()
      .makeApiClient(BatchV1Api)
      .readNamespacedJob({ name: 'kud-edge-1-kubeconfig', namespace });
    const [kudPod] = (
      await core().listNamespacedPod({ namespace, labelSelector: 'job-name=kud-edge-1' })
    ).items;
    expect(kudPod?.spec?.nodeName).toBeTruthy();
    expect(publisher.spec?.template.spec?.nodeName).toBe(kudPod?.spec?.nodeName);
    // The publisher really runs on the node (the functions' own image, under its own account).
    expect((await waitForJobEnd(admin(), namespace, 'kud-edge-1-kubeconfig')).ended).toMatchObject({
      type: 'Complete',
    });
    expect(
      summary(await chain.publish(await jobUpdateEvent(admin(), namespace, 'kud-edge-1-kubeconfig'))),
    ).toEqual([['kud-job-launch', 204, undefined]]);
    expect(
      conditionOf(await readProvisioning(admin(), namespace, 'edge'), 'KubeconfigPublished'),
    ).toMatchObject({ status: 'True' });
    const [master, worker] = lab.hosts;
    expect(master?.commands()).toEqual([expect.stringContaining("'htop'")]);
    expect(worker?.commands()).toEqual([expect.stringContaining("'jq'")]);
    expect(conditionOf(await readProvisioning(admin(), namespace, 'edge'), 'Ready')).toMatchObject({
      status: 'True',
    });
    expect(conditionOf(await readSoftware('tools'), 'Ready')).toMatchObject({ status: 'True' });
  }, 240_000);

  it('runs host-lookup for a Virtlet cluster (VM pods listed in VM_NAMESPACES only, claimed and released)', async () => {
    const namespace = cluster.namespace;
    const created = await createProvisioning(
      admin(),
      provisioningObject({
        name: 'vms',
        namespace,
        cluster: 'vm-edge',
        clusterType: 'virtlet-vm',
        masters: [{ label: 'vm-1', mac: 'de:ad:00:0e:00:01' }],
      }),
    );
    expect(summary(await chain.publish(sourceEvent('add', created)))).toEqual([
      ['host-lookup', 200, EventTypes.provisioningFailed],
    ]);
    expect(conditionOf(await readProvisioning(admin(), namespace, 'vms'), 'HostsResolved')).toMatchObject({
      status: 'False',
      reason: 'VmNotFound',
    });
    expect(await eventCount('vms', 'VmNotFound')).toBe(1);
    // The VMs appear: vm-1 is claimed (patch), then released (get, patch) when the spec moves to vm-2.
    for (const [name, i] of [
      ['vm-1', 1],
      ['vm-2', 2],
    ] as const)
      await createVmPod(admin(), {
        namespace,
        name,
        networks: [{ name: 'default', mac: `de:ad:00:0e:00:0${i}`, ips: [`10.244.14.${i}`], default: true }],
      });
    const retried = await patchSpec('provisionings', 'vms', { masters: [{ 'vm-1': { 'mac-address': 'de:ad:00:0e:00:01' } }, { 'vm-2': { 'mac-address': 'de:ad:00:0e:00:02' } }] });
    // host-lookup alone: the Virtlet cluster is never installed here.
    expect((await chain.deliver('host-lookup', sourceEvent('update', retried))).reply?.type).toBe(EventTypes.hostsResolved);
    const moved = await patchSpec('provisionings', 'vms', { masters: [{ 'vm-2': { 'mac-address': 'de:ad:00:0e:00:02' } }] });
    expect((await chain.deliver('host-lookup', sourceEvent('update', moved))).reply?.type).toBe(EventTypes.hostsResolved);
    const consumer = async (name: string) =>
      (await core().readNamespacedPod({ namespace, name })).metadata?.annotations?.['bpa.akraino.org/consumer'];
    expect(await consumer('vm-1')).toBeUndefined();
    expect(await consumer('vm-2')).toMatch(new RegExp(`^${namespace}/vms/`));
  });

  it('patches the Events that repeat when a spec change keeps the inventory', async () => {
    const provisioning = await patchSpec('provisionings', 'edge', { PodSubnet: '10.244.128.0/18' });
    expect(provisioning.metadata.generation).toBe(2);
    // Same inventory, another installer argument: another launch hash, so the finished Job is
    // replaced (delete, create) and the cluster is ready again when the new one completes.
    expect(summary(await chain.publish(sourceEvent('update', provisioning)))).toEqual([
      ['host-lookup', 200, EventTypes.hostsResolved],
      ['inventory-render', 200, EventTypes.inventoryRendered],
      ['kud-job-launch', 200, EventTypes.kudJobLaunched],
    ]);
    // While it runs, kud-job-launch's sweep shows its pod on status (pods list).
    expect((await chain.deliver('kud-job-launch', pingEvent())).status).toBe(204);
    await releaseKudJob(cluster.namespace, 'edge-1', 0);
    expect((await waitForJobEnd(admin(), cluster.namespace, 'kud-edge-1')).ended).toMatchObject({
      type: 'Complete',
    });
    expect(summary(await chain.publish(await jobUpdateEvent(admin(), cluster.namespace, 'kud-edge-1')))).toEqual([
      ['kud-job-launch', 200, EventTypes.clusterReady],
      ['software-install', 204, undefined],
    ]);
    // The new run wrote another admin.conf (the test installer's run line): the publisher of
    // generation 2 reads it and kud-job-launch replaces its own Secret's data (update).
    const secret = () => core().readNamespacedSecret({ name: 'edge-1-admin-kubeconfig', namespace: cluster.namespace });
    const before = await secret();
    expect(await publishKubeconfig(2)).toMatchObject({ status: 'True', reason: 'KubeconfigPublished' });
    const after = await secret();
    expect(after.metadata?.uid).toBe(before.metadata?.uid);
    expect(after.data?.value).not.toBe(before.data?.value);
    expect(Buffer.from(after.data?.value ?? '', 'base64').toString('utf8')).toMatch(/^# run: /m);
    const software = await patchSpec('softwares', 'tools', { masterSoftware: ['htop', 'curl'] });
    expect(summary(await chain.publish(sourceEvent('update', software)))).toEqual([
      ['software-install', 204, undefined],
    ]);
    expect(await runInstallJobOf('tools')).toBe('installed');
    expect(summary(await chain.publish(sourceEvent('update', (await readSoftware('tools')) as never)))).toEqual([
      ['software-install', 200, EventTypes.softwareInstalled],
    ]);
    expect(lab.hosts[0]?.commands()).toHaveLength(2);
    // Same object, reason and message as for generation 1: one Event each, count 2.
    expect(await eventCount('edge', 'HostsResolved')).toBe(2);
    expect(await eventCount('edge', 'InventoryRendered')).toBe(2);
    expect(await eventCount('edge', 'KudInstalled')).toBe(2);
    expect(await eventCount('tools', 'Installed')).toBe(2);
  }, 240_000);

  it('replaces the finished Job and both ConfigMaps on an inventory change; the sweeps finish it', async () => {
    const namespace = cluster.namespace;
    const batch = admin().makeApiClient(BatchV1Api);
    const oldJob = await batch.readNamespacedJob({ name: 'kud-edge-1', namespace });
    const oldInventory = await core().readNamespacedConfigMap({ name: 'edge-1-inventory', namespace });
    // master-1 becomes a worker too: another hosts.ini and another node list.
    const provisioning = await patchSpec('provisionings', 'edge', {
      workers: [{ 'worker-1': { 'mac-address': workerMac } }, { 'master-1': null }],
    });
    expect(provisioning.metadata.generation).toBe(3);
    expect(summary(await chain.publish(sourceEvent('update', provisioning)))).toEqual([
      ['host-lookup', 200, EventTypes.hostsResolved],
      ['inventory-render', 200, EventTypes.inventoryRendered],
      ['kud-job-launch', 200, EventTypes.kudJobLaunched],
    ]);
    const newJob = await batch.readNamespacedJob({ name: 'kud-edge-1', namespace });
    expect(newJob.metadata?.uid).not.toBe(oldJob.metadata?.uid);
    const newInventory = await core().readNamespacedConfigMap({ name: 'edge-1-inventory', namespace });
    expect(newInventory.data?.['hosts.ini']).not.toBe(oldInventory.data?.['hosts.ini']);

    // The Job finishes and its update event is lost: the sweep (ping) finds it.
    await releaseKudJob(namespace, 'edge-1', 0);
    expect((await waitForJobEnd(admin(), namespace, 'kud-edge-1')).ended).toMatchObject({ type: 'Complete' });
    expect(summary(await chain.publish(pingEvent()))).toEqual([
      ['host-lookup', 204, undefined],
      ['kud-job-launch', 204, undefined],
      ['software-install', 204, undefined],
    ]);
    const sent = perFunction.get('kud-job-launch')?.harness.collector.events.map((e: CloudEvent<unknown>) => e.type);
    expect(sent).toEqual([EventTypes.clusterReady]);
    expect(summary(await deliverCollected('kud-job-launch'))).toEqual([['software-install', 204, undefined]]);

    const nodes = await core().readNamespacedConfigMap({ name: 'edge-1-configmap', namespace });
    expect(nodes.data).toEqual({
      'MASTER_master-1': lab.hosts[0]?.ip,
      'WORKER_worker-1': lab.hosts[1]?.ip,
      'WORKER_master-1': lab.hosts[0]?.ip,
    });
    const status = await readProvisioning(admin(), namespace, 'edge');
    expect(conditionOf(status, 'Ready')).toMatchObject({ status: 'True', observedGeneration: 3 });
  }, 240_000);

  it('deletes a Provisioning: kud-job-launch’s sweep releases its cluster name and removes the finalizer', async () => {
    const namespace = cluster.namespace;
    const leases = admin().makeApiClient(CoordinationV1Api);
    expect((await leases.readNamespacedLease({ name: 'cluster-vm-edge', namespace })).spec?.holderIdentity).toBe(
      `${namespace}/vms`,
    );
    await custom().deleteNamespacedCustomObject({ ...bpaGroup, plural: 'provisionings', namespace, name: 'vms' });
    expect((await chain.deliver('kud-job-launch', pingEvent())).status).toBe(204);
    await expect(leases.readNamespacedLease({ name: 'cluster-vm-edge', namespace })).rejects.toMatchObject({ code: 404 });
    await expect(
      custom().getNamespacedCustomObject({ ...bpaGroup, plural: 'provisionings', namespace, name: 'vms' }),
    ).rejects.toMatchObject({ code: 404 });
    // Its VM released (get, patch), after the cleanup (none: no KUD Job ran for it).
    const pod = await core().readNamespacedPod({ namespace, name: 'vm-2' });
    expect(pod.metadata?.annotations?.['bpa.akraino.org/consumer']).toBeUndefined();
  });

  it('runs host-lookup for a KubeVirt cluster (VMIs listed in VM_NAMESPACES only, claimed, released on deletion)', async () => {
    const namespace = cluster.namespace;
    await installKubevirtCrd(admin());
    const vmis = fixtureVmis();
    for (const name of ['kv-master', 'kv-worker']) await createVmi(admin(), namespace, vmis.get(name)!);
    const created = await createProvisioning(
      admin(),
      provisioningObject({
        name: 'kvms',
        namespace,
        cluster: 'kv-edge',
        clusterType: 'kubevirt-vm',
        masters: [{ label: 'kv-master', mac: '52:54:00:6b:00:01' }],
        workers: [{ label: 'kv-worker', mac: '52:54:00:6b:00:02' }],
      }),
    );
    // host-lookup alone: the KubeVirt cluster is never installed here.
    expect((await chain.deliver('host-lookup', sourceEvent('add', created))).reply?.type).toBe(EventTypes.hostsResolved);
    const consumer = async (name: string) =>
      (await readVmi(admin(), namespace, name)).metadata.annotations?.['bpa.akraino.org/consumer'];
    expect(await consumer('kv-worker')).toMatch(new RegExp(`^${namespace}/kvms/`));
    // kv-worker leaves the spec: host-lookup releases it (get, patch).
    const moved = await patchSpec('provisionings', 'kvms', { workers: [] });
    expect((await chain.deliver('host-lookup', sourceEvent('update', moved))).reply?.type).toBe(EventTypes.hostsResolved);
    expect(await consumer('kv-worker')).toBeUndefined();
    expect(await consumer('kv-master')).toMatch(new RegExp(`^${namespace}/kvms/`));
    // Deleted: kud-job-launch's sweep releases its VMI (get, patch) and removes the finalizer.
    await custom().deleteNamespacedCustomObject({ ...bpaGroup, plural: 'provisionings', namespace, name: 'kvms' });
    expect((await chain.deliver('kud-job-launch', pingEvent())).status).toBe(204);
    await expect(
      custom().getNamespacedCustomObject({ ...bpaGroup, plural: 'provisionings', namespace, name: 'kvms' }),
    ).rejects.toMatchObject({ code: 404 });
    expect(await consumer('kv-master')).toBeUndefined();
  });

  it('software-install replaces its own drifted installer Role, then notices an install Job that failed without recording an outcome (its sweep reads the Job)', async () => {
    const namespace = cluster.namespace;
    // The installer Role of tools drifts (its rules no longer what the configuration gives, as
    // after an SSH_KEY_SECRET rename): the next run replaces it (update), the same object (uid).
    const rbacApi = admin().makeApiClient(RbacAuthorizationV1Api);
    const roleName = installerServiceAccountName('tools');
    const drifted = await rbacApi.readNamespacedRole({ name: roleName, namespace });
    const expectedRules = installerRole(
      { namespace, name: 'tools', uid: '', generation: 0 },
      'ssh-key-secret',
    ).rules;
    await rbacApi.replaceNamespacedRole({
      name: roleName,
      namespace,
      body: {
        ...drifted,
        rules: (drifted.rules ?? []).map((rule) =>
          rule.resources?.includes('secrets') ? { ...rule, resourceNames: ['another-ssh-key'] } : rule,
        ),
      },
    });
    const software = await patchSpec('softwares', 'tools', { workerSoftware: ['jq', 'tree'] });
    expect(summary(await chain.publish(sourceEvent('update', software)))).toEqual([
      ['software-install', 204, undefined],
    ]);
    const replaced = await rbacApi.readNamespacedRole({ name: roleName, namespace });
    expect(replaced.metadata?.uid).toBe(drifted.metadata?.uid);
    // As the API server stores them: compared through JSON (the client returns class instances).
    expect(JSON.parse(JSON.stringify(replaced.rules))).toEqual(expectedRules);
    // Its pod cannot start here (the image is not mapped); a 1 s deadline, set as an operator may,
    // makes the real Job controller fail it (DeadlineExceeded), with no outcome recorded.
    await admin()
      .makeApiClient(BatchV1Api)
      .patchNamespacedJob(
        { name: 'tools-install-3', namespace, body: { spec: { activeDeadlineSeconds: 1 } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    expect((await waitForJobEnd(admin(), namespace, 'tools-install-3')).ended).toMatchObject({ type: 'Failed' });
    expect(summary(await chain.deliver('software-install', pingEvent()).then((d) => [d]))).toEqual([
      ['software-install', 204, undefined],
    ]);
    const failed = conditionOf(await readSoftware('tools'), 'Ready');
    expect(failed).toMatchObject({ status: 'False', reason: 'InstallJobFailed' });
    // The Job controller's own reason and message, and where to look.
    expect(failed?.message).toMatch(/^Install Job tools-install-3 ran past its deadline of 1 s without recording an outcome \(DeadlineExceeded: /);
    expect(failed?.message).toContain(`kubectl -n ${namespace} logs job/tools-install-3`);
    const sent = perFunction.get('software-install')?.harness.collector.events.map((e: CloudEvent<unknown>) => e.type);
    expect(sent).toContain(EventTypes.softwareFailed);
  });

  it('writes the Image a Provisioning names into its hosts’ spec.image (Image get, host get and patch)', async () => {
    const namespace = cluster.namespace;
    const image = (await custom().createNamespacedCustomObject({
      ...bpaGroup,
      plural: 'images',
      namespace,
      body: {
        apiVersion: 'bpa.akraino.org/v1alpha1',
        kind: 'Image',
        metadata: { name: 'imaged.os.node', namespace },
        spec: { type: 'os', owner: namespace, clusterName: 'imaged', imageName: 'node', length: 1, format: 'raw' },
      },
    })) as Record<string, unknown>;
    await custom().replaceNamespacedCustomObjectStatus({
      ...bpaGroup,
      plural: 'images',
      namespace,
      name: 'imaged.os.node',
      body: { ...image, status: { phase: 'Ready', sha256: 'd'.repeat(64), url: 'http://image-download.test/node' } },
    });
    const object = provisioningObject({
      name: 'imaged',
      namespace,
      cluster: 'imaged',
      masters: [{ label: 'master-1', mac: imagedMac }],
    });
    const created = await createProvisioning(admin(), {
      ...object,
      spec: { ...object.spec, image: { name: 'imaged.os.node' } } as typeof object.spec,
    });
    // host-lookup alone: the rest of the chain was exercised above.
    const delivery = await chain.deliver('host-lookup', sourceEvent('add', created));
    expect([delivery.status, delivery.reply?.type]).toEqual([200, EventTypes.hostsResolved]);
    const host = (await custom().getNamespacedCustomObject({
      group: 'metal3.io',
      version: 'v1alpha1',
      plural: 'baremetalhosts',
      namespace,
      name: 'bmh-imaged',
    })) as { spec: { image?: { url?: string } } };
    expect(host.spec.image?.url).toBe('http://image-download.test/node');
    // Deleted: kud-job-launch releases the host (get, patch) with the image it was given.
    await custom().deleteNamespacedCustomObject({ ...bpaGroup, plural: 'provisionings', namespace, name: 'imaged' });
    expect((await chain.deliver('kud-job-launch', pingEvent())).status).toBe(204);
    const released = (await custom().getNamespacedCustomObject({
      group: 'metal3.io',
      version: 'v1alpha1',
      plural: 'baremetalhosts',
      namespace,
      name: 'bmh-imaged',
    })) as { spec: { image?: unknown; consumerRef?: unknown } };
    expect(released.spec).not.toHaveProperty('consumerRef');
    expect(released.spec).not.toHaveProperty('image');
  });

  it('renames a cluster: kud-job-launch’s sweep removes the old name’s ConfigMaps, cleans its directory on the node, then removes its Jobs', async () => {
    const namespace = cluster.namespace;
    const renamed = (await custom().patchNamespacedCustomObject(
      { ...bpaGroup, plural: 'provisionings', namespace, name: 'edge', body: { metadata: { labels: { cluster: 'edge-2' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )) as Awaited<ReturnType<typeof readProvisioning>>;
    expect(summary(await chain.publish(sourceEvent('update', renamed)))).toEqual([
      ['host-lookup', 200, EventTypes.hostsResolved],
      ['inventory-render', 200, EventTypes.inventoryRendered],
      ['kud-job-launch', 200, EventTypes.kudJobLaunched],
    ]);
    // The release advances only in kud-job-launch's sweep, one step a ping: the old name's
    // ConfigMaps go and its cleanup Job is created on the node the KUD pod ran on.
    const ping = async () => expect((await chain.deliver('kud-job-launch', pingEvent())).status).toBe(204);
    await waitFor(
      async () => {
        await ping();
        return (await jobOrGone('kud-edge-1-cleanup')) ? true : undefined;
      },
      { what: 'the cleanup Job of the old name edge-1 created', timeoutMs: 60_000, intervalMs: 500 },
    );
    for (const name of ['edge-1-inventory', 'edge-1-configmap'])
      await expect(core().readNamespacedConfigMap({ name, namespace })).rejects.toMatchObject({ code: 404 });
    // The finished KUD Job of the old name stays until the cleanup has run.
    expect((await waitForJobEnd(admin(), namespace, 'kud-edge-1-cleanup')).ended).toMatchObject({ type: 'Complete' });
    expect(await jobOrGone('kud-edge-1')).toBeDefined();
    // Then the next sweep removes every Job of the old name (the KUD Job and the cleanup Job).
    await waitFor(
      async () => {
        await ping();
        const left = [await jobOrGone('kud-edge-1'), await jobOrGone('kud-edge-1-cleanup')];
        return left.every((job) => job === undefined) ? true : undefined;
      },
      { what: 'the Jobs of the old name edge-1 gone', timeoutMs: 60_000, intervalMs: 500 },
    );
    expect(await eventCount('edge', 'CleanupDone')).toBe(1);
    expect(await eventCount('edge', 'ClusterNameReleased')).toBe(1);
  }, 240_000);

  it.each(functions.map((f) => f.name))('%s made exactly the calls of its rows in the RBAC table', (name) => {
    const account = rbacTable[name];
    const observed = perFunction.get(name as FunctionName);
    const calls = withOwnWatches(observed?.kubeConfig.calls ?? [], observed?.lines ?? []);
    const recorded = name === 'host-lookup' ? withBareMetalHostWatch(calls) : calls;
    expect(recorded.length).toBeGreaterThan(0);
    const grants = allGrantsOf(account);
    const used = [...new Set(recorded.map((call) => permissionOfCall(call, grants)))].sort();
    // Verbs held only so the API server lets the account create a Role granting them are never called.
    const granted = [...new Set(permissionsOf(grantsAsRules(calledGrants(grants))).map(permissionKey))].sort();
    expect(used).toEqual(granted);
    // The test scopes the sweeps, the BareMetalHost list and the VM pods (VM_NAMESPACES) to its
    // namespace: no call is made in all namespaces.
    const clusterWide = [
      ...new Set(
        recorded.filter((c) => c.namespace === undefined && !isProvisioningWatch(c)).map((c) => permissionKey(c)),
      ),
    ];
    expect(clusterWide).toEqual([]);
  });

  it('the install Job’s ServiceAccount made only calls its Role allows, and every delegated one', () => {
    const calls = [...installJobs.values()].flatMap((kubeConfig) => kubeConfig.calls);
    expect(calls.length).toBeGreaterThan(0);
    const role = installerRole(
      { namespace: cluster.namespace, name: 'tools', uid: '', generation: 0 },
      'ssh-key-secret',
    );
    const rules = (role.rules ?? []).map((r) => ({
      group: r.apiGroups?.[0] ?? '',
      resource: r.resources?.[0] ?? '',
      verbs: r.verbs,
      why: '',
      ...(r.resourceNames ? { resourceNames: r.resourceNames } : {}),
    }));
    const allowed = new Set(permissionsOf(grantsAsRules(rules)).map(permissionKey));
    // A call limited by name in one rule may be allowed by another without names (softwares list).
    const used = [...new Set(calls.map((call) => permissionKey({ ...call, resourceName: call.name })))];
    const denied = used.filter(
      (key) => !allowed.has(key) && !allowed.has(key.replace(/:[^:]*$/, '')),
    );
    expect(denied).toEqual([]);
    const delegated = permissionsOf(grantsAsRules(allGrantsOf(rbacTable['software-install']).filter((g) => g.delegated)));
    const unnamed = new Set(calls.map((call) => permissionKey({ ...call, resourceName: undefined })));
    expect(delegated.map(permissionKey).filter((key) => !unnamed.has(key))).toEqual([]);
  });
});
