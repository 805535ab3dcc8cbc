/**
 * The claims of docs/security.md that a run can check:
 * - the SSH private key never leaves its Secret: after a whole chain (Provisioning to installed
 *   Software, plus a failing host), no status, Event, ConfigMap, Job, chain event or log line
 *   (debug level) holds any of its material; known_hosts keys never appear either (status keeps
 *   only SHA256 fingerprints);
 * - namespace boundary: a Software only uses the SSH key Secret of its own namespace and only
 *   the cluster ConfigMap of its own namespace, so a Software in namespace A can neither use
 *   B's key nor reach B's hosts;
 * - the KUD Job (in the functions' namespace, docs/adr/0013-tenancy.md) mounts the operator's key
 *   Secret of that namespace by reference and carries no key material in its spec; nothing of the
 *   functions' namespace (its Jobs, the mounted inventory ConfigMap, its Events) holds the
 *   tenant's key either.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { createKudSshKeySecret, describeOnNode } from '../support/node.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BatchV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { createLogger } from '../../shared/log.js';
import { EventTypes } from '../../shared/events/types.js';
import { createNamespace, deleteNamespace, uniqueNamespaceName } from '../../local/control-plane/index.js';
import { useTestCluster } from '../support/cluster.js';
import { type SshHosts } from '../support/sshd.js';
import { startNodeSshHosts } from '../support/node-lab-hosts.js';
import { sourceEvent } from '../integration/functions/support/chain-harness.js';
import {
  bpaGroup,
  createProvisioning,
  createReadyProvisioning,
} from '../integration/functions/support/fixtures.js';
import { FaultTally } from './report/tally.js';
import { FaultyChain, conditionsOf, isTrue } from './support/faulty-chain.js';
import {
  clusterProvisioning,
  createClusterHosts,
  createSoftware,
  labChainEnv,
  prepareNamespace,
} from './support/lab-cluster.js';

const cluster = useTestCluster();
const tally = new FaultTally(import.meta.url);

/** Pieces of a secret text long enough to be unmistakable: each base64 line of a PEM/OpenSSH body. */
const fragmentsOf = (text: string) =>
  text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.length >= 24 && !line.startsWith('-----'));

describeOnNode('security claims', () => {
  let lab: SshHosts;
  let chain: FaultyChain;
  let dir: string;
  let otherNamespace: string;
  /** Where the KUD Job runs and what it mounts lives (FUNCTIONS_NAMESPACE), with the operator's key. */
  let functionsNamespace: string;
  const logLines: string[] = [];

  beforeAll(async () => {
    lab = await startNodeSshHosts({ count: 2 });
    dir = await mkdtemp(join(tmpdir(), 'bpa-security-'));
    const { knownHostsPath } = await prepareNamespace(cluster.kubeConfig, cluster.namespace, lab, dir);
    await createClusterHosts(cluster.kubeConfig, cluster.namespace, lab, 0, 2);
    functionsNamespace = await createNamespace(cluster.kubeConfig, uniqueNamespaceName('bpa-functions'));
    await createKudSshKeySecret(cluster.kubeConfig, functionsNamespace);
    chain = new FaultyChain({
      kubeConfig: cluster.kubeConfig,
      env: {
        ...labChainEnv(cluster.namespace, lab, knownHostsPath),
        FUNCTIONS_NAMESPACE: functionsNamespace,
      },
      log: createLogger({ level: 'debug', sink: (line) => logLines.push(line) }),
    });
    await chain.start();
    otherNamespace = await createNamespace(cluster.kubeConfig, uniqueNamespaceName('security-other'));
  }, 120_000);

  afterAll(async () => {
    await chain?.stop();
    await lab?.stopAll();
    if (otherNamespace) await deleteNamespace(cluster.kubeConfig, otherNamespace);
    if (functionsNamespace) await deleteNamespace(cluster.kubeConfig, functionsNamespace);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('keeps the SSH private key and host keys out of status, Events, ConfigMaps, the Job, events and logs', async () => {
    const namespace = cluster.namespace;
    const software = await createSoftware(cluster.kubeConfig, namespace, 'sec-tools', 'sec');
    const failing = await createSoftware(cluster.kubeConfig, namespace, 'sec-failing', 'sec', {
      workerSoftware: ['jq'],
    });
    await chain.publish(sourceEvent('add', software));
    await chain.publish(sourceEvent('add', failing));
    await chain.publish(
      sourceEvent(
        'add',
        await createProvisioning(cluster.kubeConfig, clusterProvisioning(namespace, 0, 'sec', 1, 1)),
      ),
    );
    // One host fails its command, so error output and failure paths are searched too.
    await lab.setBehaviour(lab.hosts[1]!, {
      kind: 'fail',
      exitCode: 100,
      stderr: 'E: Unable to locate package jq',
    });
    await chain.finishJob(functionsNamespace, 'kud-sec');
    expect(isTrue(await conditionsOf(cluster.kubeConfig, 'provisionings', namespace, 'sec'), 'Ready')).toBe(
      true,
    );
    expect(
      chain.harness.replies(EventTypes.softwareFailed).length +
        chain.harness.replies(EventTypes.softwareInstalled).length,
    ).toBeGreaterThan(0);

    const api = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    const batch = cluster.kubeConfig.makeApiClient(BatchV1Api);
    const places: Record<string, string> = {
      'Provisioning status': JSON.stringify(
        await api.listNamespacedCustomObject({ ...bpaGroup, plural: 'provisionings', namespace }),
      ),
      'Software status': JSON.stringify(
        await api.listNamespacedCustomObject({ ...bpaGroup, plural: 'softwares', namespace }),
      ),
      Events: JSON.stringify(await core.listNamespacedEvent({ namespace })),
      ConfigMaps: JSON.stringify(await core.listNamespacedConfigMap({ namespace })),
      Job: JSON.stringify(await batch.listNamespacedJob({ namespace: functionsNamespace })),
      "the functions' namespace's ConfigMaps": JSON.stringify(
        await core.listNamespacedConfigMap({ namespace: functionsNamespace }),
      ),
      "the functions' namespace's Events": JSON.stringify(
        await core.listNamespacedEvent({ namespace: functionsNamespace }),
      ),
      'chain events': JSON.stringify(chain.harness.deliveries.map((d) => [d.event, d.reply, d.body])),
      'function logs': logLines.join('\n'),
    };
    const hostKeyBlobs = lab
      .knownHosts()
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split(' ')[2]!);
    const secrets = [
      ...fragmentsOf(lab.privateKey).map((f) => ['private key', f] as const),
      [
        'private key (base64 of the Secret)',
        Buffer.from(lab.privateKey).toString('base64').slice(0, 64),
      ] as const,
      ...hostKeyBlobs.map((b) => ['known_hosts key', b] as const),
    ];
    const leaks: string[] = [];
    for (const [where, text] of Object.entries(places)) {
      expect(text.length).toBeGreaterThan(100);
      for (const [what, fragment] of secrets) if (text.includes(fragment)) leaks.push(`${what} in ${where}`);
      if (/PRIVATE KEY/.test(text)) leaks.push(`a PEM header in ${where}`);
    }
    tally.add('Security', {
      injected: Object.keys(places).length,
      recovered: Object.keys(places).length - new Set(leaks.map((l) => l.split(' in ')[1])).size,
      lost: new Set(leaks.map((l) => l.split(' in ')[1])).size,
    });
    tally.note(
      `key material searched in ${Object.keys(places).join(', ')} (${logLines.length} log lines): ${leaks.length === 0 ? 'none found' : leaks.join('; ')}`,
    );
    expect(leaks).toEqual([]);
    // The Job refers to the operator's Secret of its own namespace by name only.
    const job = await batch.readNamespacedJob({ name: 'kud-sec', namespace: functionsNamespace });
    expect(job.spec?.template.spec?.volumes?.some((v) => v.secret?.secretName === 'ssh-key-secret')).toBe(
      true,
    );
    // Status keeps host key fingerprints (SHA256:...), never keys.
    const status = JSON.stringify(
      await api.getNamespacedCustomObject({ ...bpaGroup, plural: 'softwares', namespace, name: 'sec-tools' }),
    );
    expect(status).toContain(lab.hosts[0]!.hostKeyFingerprint);
  }, 180_000);

  it("does not let a Software use another namespace's SSH key or reach its cluster's hosts", async () => {
    const before = lab.hosts.map((h) => h.commands().length);
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    // Namespace B (the test's own) has the key and the cluster `sec`; namespace A (other) has neither key nor cluster.
    const intruder = await createSoftware(cluster.kubeConfig, otherNamespace, 'intruder', 'sec');
    await chain.publish(sourceEvent('add', intruder));
    let conditions = await conditionsOf(cluster.kubeConfig, 'softwares', otherNamespace, 'intruder');
    const waiting = conditions.find((c) => c.type === 'Ready');
    expect(waiting).toMatchObject({ status: 'False', reason: 'ClusterNotReady' });
    expect(waiting?.message).toContain('sec-configmap');

    // A's own cluster ConfigMap pointing at B's hosts, still without a key in A: refused before any connection.
    await core.createNamespacedConfigMap({
      namespace: otherNamespace,
      body: {
        metadata: { name: 'stolen-configmap', labels: { cluster: 'stolen' } },
        data: { MASTER_m: lab.hosts[0]!.ip },
      },
    });
    // ... and a Provisioning of that name made Ready by hand, so the cluster gate opens and the key
    // is what stops it.
    await createReadyProvisioning(cluster.kubeConfig, otherNamespace, 'stolen');
    const thief = await createSoftware(cluster.kubeConfig, otherNamespace, 'thief', 'stolen');
    await chain.publish(sourceEvent('add', thief));
    conditions = await conditionsOf(cluster.kubeConfig, 'softwares', otherNamespace, 'thief');
    const refused = conditions.find((c) => c.type === 'Installed');
    expect(refused).toMatchObject({ status: 'False', reason: 'SshKeySecretMissing' });
    expect(refused?.message).toContain(`namespace ${otherNamespace}`);
    const after = lab.hosts.map((h) => h.commands().length);
    const noSession = after.every((n, i) => n === before[i]);
    tally.add('Security', { injected: 2, recovered: noSession ? 2 : 0, lost: noSession ? 0 : 2 });
    tally.note(
      `namespace boundary: a Software in another namespace waited (no cluster there) and, with a forged cluster ConfigMap, was refused for want of its own key; SSH sessions opened: ${after.reduce((a, n, i) => a + n - (before[i] ?? 0), 0)}`,
    );
    expect(after).toEqual(before);
  }, 120_000);
});
