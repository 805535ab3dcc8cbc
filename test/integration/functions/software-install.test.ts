/**
 * software-install and its install Jobs (pods on the run's node) against real OpenSSH servers
 * (one sshd per lab address of the node's network, recording the command instead of running apt)
 * and the real API server: the cluster-not-ready path completed by
 * cluster.ready from the chain, the command per role, one session for a node in both roles,
 * trust on first use then enforcement, hosts failing alone, and injection stopped before any
 * connection. The KUD Job runs on the run's node and the real Job controller completes it (its
 * image's installer exits 0: kud-succeeds, test/fixtures/node/kud-installers); nothing writes a
 * Job's status but the Job controller.
 */
import { startCommand } from '../../../functions/software-install/ssh/detached.js';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { EventTypes } from '../../../shared/events/types.js';
import { definition as hostLookup } from '../../../functions/host-lookup/index.js';
import { definition as inventoryRender } from '../../../functions/inventory-render/index.js';
import { definition as kudJobLaunch } from '../../../functions/kud-job-launch/index.js';
import { definition as softwareInstall } from '../../../functions/software-install/index.js';
import { useTestCluster } from '../../support/cluster.js';
import { type SshHosts, type SshTestHost } from '../../support/sshd.js';
import { startNodeSshHosts } from '../../support/node-lab-hosts.js';
import { createKudSshKeySecret, describeOnNode, kudTestImage, waitForJobEnd } from '../../support/node.js';
import { ChainHarness, jobUpdateEvent, replyTypes, sourceEvent } from './support/chain-harness.js';
import {
  bpaGroup,
  createBareMetalHost,
  createProvisioning,
  provisioningObject,
  writeProvisioningStatus,
} from './support/fixtures.js';

const cluster = useTestCluster();

/** The detached install's start command (ssh/detached.ts) a host receives, its install id left out. */
const command = (words: string[]) => startCommand({ id: '<id>', words, username: 'not-root' });
const withoutId = (commands: string[] | undefined) =>
  commands?.map((c) => c.replace(/ sh '[0-9a-f]{24}' /, " sh '<id>' "));

interface StoredSoftware {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; generation: number; uid: string };
  spec: Record<string, unknown>;
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
      roles: string[];
      packages: string[];
      exitCode: number | null;
      error?: string;
      hostKeyFingerprint?: string;
    }[];
  };
}

describeOnNode('software-install', () => {
  let lab: SshHosts;
  let hosts: SshTestHost[];
  let harness: ChainHarness;
  const softwares = () => cluster.kubeConfig.makeApiClient(CustomObjectsApi);

  const createSoftware = async (name: string, clusterName: string, spec: Record<string, unknown>) =>
    (await softwares().createNamespacedCustomObject({
      ...bpaGroup,
      plural: 'softwares',
      namespace: cluster.namespace,
      body: {
        apiVersion: 'bpa.akraino.org/v1alpha1',
        kind: 'Software',
        metadata: { name, namespace: cluster.namespace, labels: { cluster: clusterName } },
        spec,
      },
    })) as StoredSoftware;
  const readSoftware = async (name: string) =>
    (await softwares().getNamespacedCustomObject({
      ...bpaGroup,
      plural: 'softwares',
      namespace: cluster.namespace,
      name,
    })) as StoredSoftware;
  const condition = (software: StoredSoftware, type: string) =>
    software.status?.conditions?.find((c) => c.type === type);
  const commandCounts = () => hosts.map((host) => host.commands().length);

  beforeAll(async () => {
    lab = await startNodeSshHosts({ count: 4 });
    hosts = lab.hosts;
    const namespace = cluster.namespace;
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    await core.createNamespacedSecret({
      namespace,
      body: {
        metadata: { name: 'ssh-key-secret' },
        data: {
          id_rsa: Buffer.from(lab.privateKey).toString('base64'),
          'id_rsa.pub': Buffer.from(lab.publicKey).toString('base64'),
        },
      },
    });
    const nodeHosts = [
      ['m-1', 'aa:bb:cc:00:02:01', hosts[0]],
      ['m-2', 'aa:bb:cc:00:02:02', hosts[1]],
      ['w-1', 'aa:bb:cc:00:02:03', hosts[2]],
    ] as const;
    for (const [name, mac, host] of nodeHosts)
      await createBareMetalHost(cluster.kubeConfig, {
        name,
        namespace,
        bootMac: mac,
        nics: [{ name: 'eth0', mac, ip: (host as SshTestHost).ip }],
      });
    harness = new ChainHarness(cluster.kubeConfig, {
      BMH_NAMESPACE: namespace,
      IP_SOURCES: 'nics',
      SSH_USER: lab.username,
      SSH_PORT: String(lab.port),
      SSH_CONNECT_TIMEOUT_SECONDS: '30',
      SSH_TIMEOUT_SECONDS: '30',
      SSH_CONCURRENCY: '4',
      KUD_IMAGE: kudTestImage.succeeds,
    });
    await harness.start([hostLookup, inventoryRender, kudJobLaunch, softwareInstall]);
    // The KUD Job runs in the functions' namespace and mounts the operator's key there (contract
    // section 12); the Software's own namespace keeps the key of the SSH installs above.
    await createKudSshKeySecret(cluster.kubeConfig, harness.functionsNamespace);
  }, 120_000);

  afterAll(async () => {
    await harness?.stop();
    await lab?.stopAll();
  });

  it('waits for a cluster that is not ready, then installs per role when cluster.ready arrives', async () => {
    const namespace = cluster.namespace;
    const software = await createSoftware('tools', 'lab-1', {
      masterSoftware: ['htop', { curl: { version: '7.88.1-10+deb12u5' } }],
      workerSoftware: ['jq', 'htop'],
    });
    const early = await harness.publish(sourceEvent('add', software));
    expect(early.map((d) => d.status)).toEqual([204]);
    let status = await readSoftware('tools');
    expect(condition(status, 'Ready')).toMatchObject({ status: 'False', reason: 'ClusterNotReady' });
    expect(condition(status, 'Ready')?.message).toContain('Waiting for cluster lab-1');
    expect(commandCounts()).toEqual([0, 0, 0, 0]);
    // Its own status write comes back as an update: still waiting, nothing written again.
    expect(
      (await harness.publish(sourceEvent('update', await readSoftware('tools')))).map((d) => d.status),
    ).toEqual([204]);

    const provisioning = await createProvisioning(
      cluster.kubeConfig,
      provisioningObject({
        name: 'lab',
        namespace,
        cluster: 'lab-1',
        masters: [
          { label: 'm-1', mac: 'aa:bb:cc:00:02:01' },
          { label: 'm-2', mac: 'aa:bb:cc:00:02:02' },
        ],
        workers: [{ label: 'w-1', mac: 'aa:bb:cc:00:02:03' }, { label: 'm-2' }],
      }),
    );
    await harness.publish(sourceEvent('add', provisioning));
    // The KUD Job runs in the functions' namespace, never the tenant's (contract section 12).
    const functionsNamespace = harness.functionsNamespace;
    expect((await waitForJobEnd(cluster.kubeConfig, functionsNamespace, 'kud-lab-1')).ended).toMatchObject({
      type: 'Complete',
    });
    const completion = await harness.publish(
      await jobUpdateEvent(cluster.kubeConfig, functionsNamespace, 'kud-lab-1'),
    );
    // cluster.ready creates the install Job (204); the Job's pod on the node installs and records
    // the outcome, whose Software update is answered with software.installed.
    expect(completion.map((d) => [d.target, d.status, d.reply?.type])).toEqual([
      ['kud-job-launch', 200, EventTypes.clusterReady],
      ['software-install', 204, undefined],
      ['software-install', 200, EventTypes.softwareInstalled],
    ]);

    const master = command(['htop', 'curl=7.88.1-10+deb12u5']);
    expect(withoutId(hosts[0]?.commands())).toEqual([master]);
    // m-2 is master and worker: one session with both lists, htop once.
    expect(withoutId(hosts[1]?.commands())).toEqual([command(['htop', 'curl=7.88.1-10+deb12u5', 'jq'])]);
    expect(withoutId(hosts[2]?.commands())).toEqual([command(['jq', 'htop'])]);
    expect(withoutId(hosts[3]?.commands())).toEqual([]);

    status = await readSoftware('tools');
    expect(condition(status, 'Installed')).toMatchObject({ status: 'True', observedGeneration: 1 });
    expect(condition(status, 'Ready')).toMatchObject({ status: 'True' });
    expect(
      status.status?.hosts?.map((h) => [h.node, h.ip, h.roles, h.exitCode, h.hostKeyFingerprint]),
    ).toEqual([
      ['m-1', hosts[0]?.ip, ['master'], 0, hosts[0]?.hostKeyFingerprint],
      ['m-2', hosts[1]?.ip, ['master', 'worker'], 0, hosts[1]?.hostKeyFingerprint],
      ['w-1', hosts[2]?.ip, ['worker'], 0, hosts[2]?.hostKeyFingerprint],
    ]);
    expect(status.status?.hosts?.[1]?.packages).toEqual(['htop', 'curl=7.88.1-10+deb12u5', 'jq']);

    // Replays of every kind install nothing again.
    await Promise.all([
      harness.publish(sourceEvent('add', software)),
      harness.publish(sourceEvent('update', status)),
      harness.publish(completion[0]?.event as never),
    ]);
    expect(commandCounts()).toEqual([1, 1, 1, 0]);
  }, 240_000);

  it('stops an injection attempt before any connection', async () => {
    const before = commandCounts();
    const attempts = [
      { workerSoftware: [{ jq: { version: "1.6'; touch /tmp/bpa-pwned; '" } }] },
      { masterSoftware: [{ 'htop$(id)': { version: '1' } }] },
      { masterSoftware: [{ htop: { version: '--option=evil' } }] },
    ];
    for (const [index, spec] of attempts.entries()) {
      const software = await createSoftware(`evil-${index}`, 'lab-1', spec);
      const [delivery] = await harness.publish(sourceEvent('add', software));
      expect(delivery?.status).toBe(200);
      expect(delivery?.reply?.type).toBe(EventTypes.softwareFailed);
      const status = await readSoftware(`evil-${index}`);
      expect(condition(status, 'Installed')).toMatchObject({ status: 'False' });
      expect(condition(status, 'Ready')).toMatchObject({ status: 'False' });
      expect(status.status?.hosts).toBeUndefined();
    }
    expect(commandCounts()).toEqual(before);
  });

  it('fails only the hosts that are down, failing or changed, and keeps the trusted key', async () => {
    const namespace = cluster.namespace;
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    // A cluster of four, as kud-job-launch writes it on completion, of a Provisioning that is Ready.
    await createProvisioning(
      cluster.kubeConfig,
      provisioningObject({
        name: 'lab-2',
        namespace,
        cluster: 'lab-2',
        masters: [{ label: 'a', mac: 'aa:bb:cc:00:03:01' }],
        workers: [],
      }),
    );
    await writeProvisioningStatus(cluster.kubeConfig, namespace, 'lab-2', {
      conditions: [{ type: 'Ready', status: 'True', reason: 'ClusterReady', message: 'lab-2 is ready' }],
    });
    await core.createNamespacedConfigMap({
      namespace,
      body: {
        metadata: { name: 'lab-2-configmap', labels: { cluster: 'lab-2' } },
        data: {
          MASTER_a: hosts[0]?.ip ?? '',
          WORKER_b: hosts[1]?.ip ?? '',
          WORKER_c: hosts[2]?.ip ?? '',
          WORKER_d: hosts[3]?.ip ?? '',
        },
      },
    });
    const first = await createSoftware('fleet', 'lab-2', {
      masterSoftware: ['vim'],
      workerSoftware: ['tmux'],
    });
    expect(replyTypes(await harness.publish(sourceEvent('add', first)))).toEqual([
      EventTypes.softwareInstalled,
    ]);
    const trusted = (await readSoftware('fleet')).status?.hosts?.map((h) => h.hostKeyFingerprint);
    expect(trusted).toEqual(hosts.map((h) => h.hostKeyFingerprint));

    const before = commandCounts();
    await lab.changeHostKey(hosts[1] as SshTestHost);
    await lab.stop(hosts[2] as SshTestHost);
    await lab.setBehaviour(hosts[3] as SshTestHost, {
      kind: 'fail',
      exitCode: 100,
      stderr: 'E: Unable to locate package tmux',
    });
    // A spec change is a new generation: the install runs again.
    const current = await readSoftware('fleet');
    const changed = (await softwares().replaceNamespacedCustomObject({
      ...bpaGroup,
      plural: 'softwares',
      namespace,
      name: 'fleet',
      body: { ...current, spec: { masterSoftware: ['vim'], workerSoftware: ['tmux', 'git'] } },
    })) as StoredSoftware;
    expect(changed.metadata.generation).toBe(2);
    expect(replyTypes(await harness.publish(sourceEvent('update', changed)))).toEqual([
      EventTypes.softwareFailed,
    ]);

    const after = commandCounts();
    expect(after[0]).toBe((before[0] ?? 0) + 1); // a: fine
    expect(after[1]).toBe(before[1]); // b: refused before any command
    expect(after[2]).toBe(before[2]); // c: down
    expect(after[3]).toBe((before[3] ?? 0) + 1); // d: ran and failed

    const status = await readSoftware('fleet');
    expect(condition(status, 'Installed')).toMatchObject({
      status: 'False',
      reason: 'InstallFailed',
      observedGeneration: 2,
    });
    expect(condition(status, 'Installed')?.message).toMatch(/^Installation failed on 3 of 4 hosts/);
    const byNode = Object.fromEntries((status.status?.hosts ?? []).map((h) => [h.node, h]));
    expect(byNode.a).toMatchObject({ exitCode: 0 });
    expect(byNode.a?.error).toBeUndefined();
    expect(byNode.b?.error).toMatch(/Host key verification failed .*has changed/);
    expect(byNode.b?.hostKeyFingerprint).toBe(trusted?.[1]);
    expect(byNode.c?.error).toMatch(/Cannot connect/);
    expect(byNode.d).toMatchObject({ exitCode: 100 });
    expect(byNode.d?.error).toContain('E: Unable to locate package tmux');
    const events = await core.listNamespacedEvent({ namespace });
    expect(events.items.some((e) => e.involvedObject.name === 'fleet' && e.reason === 'InstallFailed')).toBe(
      true,
    );
  });
});
