/**
 * Host faults, through the software-install function (real HTTP server, real API server, real
 * OpenSSH servers on the run's node's lab network, known_hosts configured) and its install Job
 * (a pod on the node): one host refuses connections, one
 * accepts TCP and never greets, one hangs after the command starts, one's command fails, one
 * presents a new host key. Only those hosts fail, each with its own message; the healthy hosts
 * install; the hang costs the command timeout and no more.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { EventTypes } from '../../shared/events/types.js';
import { definition as softwareInstall } from '../../functions/software-install/index.js';
import { useTestCluster } from '../support/cluster.js';
import { startNodeSshHosts, type NodeSshHosts } from '../support/node-lab-hosts.js';
import { describeOnNode } from '../support/node.js';
import { startBlackHoleIn, type BlackHole } from '../support/faults/black-hole.js';
import { ChainHarness, replyTypes, sourceEvent } from '../integration/functions/support/chain-harness.js';
import { bpaGroup, createReadyProvisioning } from '../integration/functions/support/fixtures.js';
import { FaultTally } from './report/tally.js';

const cluster = useTestCluster();
const tally = new FaultTally(import.meta.url);
const commandTimeoutSeconds = 4;
/**
 * The healthy hosts' sessions must open within it from the install Job's pod while other files
 * load the node (the resilience load test runs 200 install Jobs); the silent host costs it once.
 */
const connectTimeoutSeconds = 20;

interface HostStatus {
  node: string;
  ip: string;
  exitCode: number | null;
  error?: string;
  durationMs: number;
}

describeOnNode('host faults during a Software install', () => {
  let lab: NodeSshHosts;
  let blackHole: BlackHole;
  let harness: ChainHarness;
  let dir: string;

  beforeAll(async () => {
    // On the node's lab network (the install Job's pod reaches them): ok-1, refused, hang, fail,
    // rekeyed, ok-2, and a seventh whose sshd makes way for a listener that never greets.
    lab = await startNodeSshHosts({ count: 7 });
    const silent = lab.hosts[6]!;
    await lab.stop(silent);
    blackHole = await startBlackHoleIn(lab.netnsOf(silent.ip), silent.ip, lab.port);
    dir = await mkdtemp(join(tmpdir(), 'bpa-host-faults-'));
    await writeFile(join(dir, 'known_hosts'), lab.knownHosts());
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    const namespace = cluster.namespace;
    await core.createNamespacedSecret({
      namespace,
      body: {
        metadata: { name: 'ssh-key-secret' },
        data: { id_rsa: Buffer.from(lab.privateKey).toString('base64') },
      },
    });
    const [ok1, refused, hang, fail, rekeyed, ok2] = lab.hosts.map((h) => h.ip);
    // software-install installs only on a cluster whose Provisioning is Ready.
    await createReadyProvisioning(cluster.kubeConfig, namespace, 'faulty');
    await core.createNamespacedConfigMap({
      namespace,
      body: {
        metadata: { name: 'faulty-configmap', labels: { cluster: 'faulty' } },
        data: {
          'MASTER_ok-1': ok1!,
          MASTER_refused: refused!,
          WORKER_hang: hang!,
          WORKER_fail: fail!,
          WORKER_rekeyed: rekeyed!,
          'WORKER_ok-2': ok2!,
          WORKER_silent: blackHole.host,
        },
      },
    });
    harness = new ChainHarness(cluster.kubeConfig, {
      SSH_USER: lab.username,
      SSH_PORT: String(lab.port),
      SSH_KNOWN_HOSTS: join(dir, 'known_hosts'),
      SSH_CONNECT_TIMEOUT_SECONDS: String(connectTimeoutSeconds),
      SSH_TIMEOUT_SECONDS: String(commandTimeoutSeconds),
      SSH_CONCURRENCY: '10',
    });
    await harness.start([softwareInstall]);
    // The faults, after known_hosts was written with every host's original key.
    await lab.stop(refused!);
    await lab.setBehaviour(hang!, { kind: 'hang', seconds: 120 });
    await lab.setBehaviour(fail!, {
      kind: 'fail',
      exitCode: 100,
      stderr: 'E: Unable to locate package tmux',
    });
    await lab.changeHostKey(rekeyed!);
  }, 120_000);

  afterAll(async () => {
    await harness?.stop();
    await blackHole?.close();
    await lab?.stopAll();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('fails only the faulty hosts, each with a specific message, and installs on the others', async () => {
    const api = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    const software = await api.createNamespacedCustomObject({
      ...bpaGroup,
      plural: 'softwares',
      namespace: cluster.namespace,
      body: {
        apiVersion: 'bpa.akraino.org/v1alpha1',
        kind: 'Software',
        metadata: { name: 'tools', namespace: cluster.namespace, labels: { cluster: 'faulty' } },
        spec: { masterSoftware: ['htop'], workerSoftware: ['tmux'] },
      },
    });
    // The add creates the install Job (204); its outcome, recorded by the Job, is announced in
    // answer to the Software's update.
    const deliveries = await harness.publish(sourceEvent('add', software as never));
    expect(deliveries.map((d) => d.status)).toEqual([204, 200]);
    expect(replyTypes(deliveries)).toEqual([EventTypes.softwareFailed]);

    const live = (await api.getNamespacedCustomObject({
      ...bpaGroup,
      plural: 'softwares',
      namespace: cluster.namespace,
      name: 'tools',
    })) as {
      status: {
        hosts: HostStatus[];
        conditions: { type: string; status: string; reason: string; message: string }[];
      };
    };
    const byNode = Object.fromEntries(live.status.hosts.map((h) => [h.node, h]));
    const expectations: [string, (h: HostStatus | undefined) => void][] = [
      ['refused', (h) => expect(h?.error).toMatch(/Cannot connect/)],
      ['silent', (h) => expect(h?.error).toMatch(/timed out|timeout/i)],
      [
        'hang',
        (h) => {
          expect(h?.exitCode).toBeNull();
          expect(h?.error).toMatch(new RegExp(`${commandTimeoutSeconds}(\\.0)?\\s*s|timed out`, 'i'));
          // The timeout is respected: the session is given up after it, not kept for the 120 s hang.
          expect(h?.durationMs).toBeGreaterThanOrEqual(commandTimeoutSeconds * 1000);
          expect(h?.durationMs).toBeLessThan(60_000);
        },
      ],
      [
        'fail',
        (h) => {
          expect(h?.exitCode).toBe(100);
          expect(h?.error).toContain('E: Unable to locate package tmux');
        },
      ],
      ['rekeyed', (h) => expect(h?.error).toMatch(/Host key verification failed/)],
    ];
    for (const [node, check] of expectations) {
      try {
        check(byNode[node]);
        expect(byNode[node]?.error).toContain(byNode[node]?.ip);
      } catch (error) {
        tally.record('Host faults', false);
        throw error;
      }
      tally.record('Host faults', true);
    }
    for (const node of ['ok-1', 'ok-2']) {
      expect(byNode[node]).toMatchObject({ exitCode: 0 });
      expect(byNode[node]?.error).toBeUndefined();
    }
    const [ok1, refused, hang, fail, rekeyed, ok2] = lab.hosts;
    expect([ok1, refused, hang, fail, rekeyed, ok2].map((h) => h!.commands().length)).toEqual([
      1, 0, 1, 1, 0, 1,
    ]);
    const installed = live.status.conditions.find((c) => c.type === 'Installed');
    expect(installed).toMatchObject({ status: 'False', reason: 'InstallFailed' });
    expect(installed?.message).toMatch(/^Installation failed on 5 of 7 hosts/);
    for (const node of ['refused', 'silent', 'hang', 'fail', 'rekeyed'])
      expect(installed?.message).toContain(node);
    tally.note(
      `host faults: ${Object.entries(byNode)
        .map(([node, h]) => `${node} ${h.error ? h.error.split('\n')[0] : 'ok'} (${h.durationMs} ms)`)
        .join('; ')}`,
    );
  }, 180_000);
});
