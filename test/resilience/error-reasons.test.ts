/**
 * Error reasons that nothing else provokes, each through a function's real HTTP server, the real
 * kube-apiserver and (for SSH) real OpenSSH servers (on the run's node lab network where an install Job
 * must reach them, on 127.0.0.N where the test opens the session itself):
 * - MissingNamespace: a source event whose object has no namespace is a 400 with that reason,
 *   for host-lookup and software-install, and nothing is read or written for it.
 * - LeasesUnreadable: a lease file that exists but cannot be read (a directory) is a 503 and
 *   HostsResolved=Unknown with the path in the message; once it is a file, the retry resolves.
 * - ConfigMapConflict: the inventory ConfigMap's writes answered 409 every time (injected by the
 *   API proxy): a 503 and InventoryRendered=Unknown; the retry after the conflicts renders.
 * - KnownHostsUnreadable: a configured SSH_KNOWN_HOSTS that cannot be read is a 503 and
 *   Installed=Unknown, and no session is opened (never trust-on-first-use instead); the retry once
 *   the file is readable installs (no claim is left behind by the failure).
 * - CommandKilled, SessionClosed: the remote command killed by a signal, and the host's session
 *   process killed mid-command (the connection drops without an exit status): each host fails
 *   with its own reason and message, the Software is InstallFailed, the delivery does not hang.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdir, mkdtemp, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { definition as hostLookup } from '../../functions/host-lookup/index.js';
import { definition as inventoryRender } from '../../functions/inventory-render/index.js';
import { definition as softwareInstall } from '../../functions/software-install/index.js';
import { runSshCommand } from '../../functions/software-install/ssh/session.js';
import { useTestCluster } from '../support/cluster.js';
import { type SshHosts, type SshTestHost } from '../support/sshd.js';
import { startNodeSshHosts } from '../support/node-lab-hosts.js';
import { describeOnNode } from '../support/node.js';
import { startApiProxy, type ApiProxy } from '../support/faults/api-proxy.js';
import {
  ChainHarness,
  replyTypes,
  sourceEvent,
  type Delivery,
} from '../integration/functions/support/chain-harness.js';
import {
  conditionOf,
  createBareMetalHost,
  createProvisioning,
  provisioningObject,
  readProvisioning,
  createReadyProvisioning,
} from '../integration/functions/support/fixtures.js';
import { conditionsOf } from './support/faulty-chain.js';
import { createSoftware } from './support/lab-cluster.js';

const cluster = useTestCluster();

/** The `{error: {reason, message}}` a function server answers a failed delivery with. */
function errorOf(delivery: Delivery): { reason?: string; message?: string } {
  try {
    return (JSON.parse(delivery.body) as { error?: { reason?: string; message?: string } }).error ?? {};
  } catch {
    return {};
  }
}

const leaseBlock = (ip: string, mac: string) =>
  `lease ${ip} {\n  starts 2 2026/12/01 08:00:00;\n  binding state active;\n  hardware ethernet ${mac};\n}\n`;

/** The lab's key as the Secret software-install reads (SSH_KEY_SECRET). */
async function addSshKeySecret(lab: SshHosts, name: string) {
  await cluster.kubeConfig.makeApiClient(CoreV1Api).createNamespacedSecret({
    namespace: cluster.namespace,
    body: {
      metadata: { name },
      data: { id_rsa: Buffer.from(lab.privateKey).toString('base64') },
    },
  });
}

async function addClusterConfigMap(name: string, data: Record<string, string>) {
  // software-install installs only on a cluster whose Provisioning is Ready.
  await createReadyProvisioning(cluster.kubeConfig, cluster.namespace, name);
  await cluster.kubeConfig.makeApiClient(CoreV1Api).createNamespacedConfigMap({
    namespace: cluster.namespace,
    body: { metadata: { name: `${name}-configmap`, labels: { cluster: name } }, data },
  });
}

async function getSoftware(name: string) {
  return (await cluster.kubeConfig.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
    group: 'bpa.akraino.org',
    version: 'v1alpha1',
    plural: 'softwares',
    namespace: cluster.namespace,
    name,
  })) as {
    apiVersion: string;
    kind: string;
    metadata: { name: string; namespace: string };
    status?: {
      conditions?: { type: string; status: string; reason?: string }[];
      hosts?: { node: string; error?: string }[];
    };
  };
}

describe('MissingNamespace', () => {
  let harness: ChainHarness;
  beforeAll(async () => {
    harness = new ChainHarness(cluster.kubeConfig, { SWEEP_NAMESPACES: cluster.namespace });
    await harness.start([hostLookup, softwareInstall]);
  });
  afterAll(() => harness?.stop());

  it.each([
    ['host-lookup', 'Provisioning'],
    ['software-install', 'Software'],
  ])('%s answers 400 MissingNamespace for a %s without a namespace', async (target, kind) => {
    const object = {
      apiVersion: 'bpa.akraino.org/v1alpha1',
      kind,
      metadata: { name: 'nowhere', labels: { cluster: 'c1' } },
      spec: {},
    };
    const delivery = await harness.deliver(target, sourceEvent('add', object));
    expect(delivery.status).toBe(400);
    expect(errorOf(delivery).reason).toBe('MissingNamespace');
    expect(errorOf(delivery).message).toContain(`${kind} nowhere has no namespace`);
    expect(delivery.reply).toBeUndefined();
  });
});

describe('the lease file', () => {
  let harness: ChainHarness;
  let dir: string;
  let leasePath: string;
  const mac = 'aa:bb:cc:07:00:01';
  /** The lease-cache test's host: unreadable holds lease-host (one owner per host). */
  const movingMac = 'aa:bb:cc:07:00:03';

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bpa-reasons-leases-'));
    leasePath = join(dir, 'dhcpd.leases');
    // Only the lease file gives IPs: the host has no inspected NIC address.
    await createBareMetalHost(cluster.kubeConfig, {
      name: 'lease-host',
      namespace: cluster.namespace,
      bootMac: mac,
    });
    await createBareMetalHost(cluster.kubeConfig, {
      name: 'moving-host',
      namespace: cluster.namespace,
      bootMac: movingMac,
    });
    harness = new ChainHarness(cluster.kubeConfig, {
      BMH_NAMESPACE: cluster.namespace,
      SWEEP_NAMESPACES: cluster.namespace,
      LEASES_SOURCE: leasePath,
      IP_SOURCES: 'leases',
    });
    await harness.start([hostLookup]);
  });
  afterAll(async () => {
    await harness?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const resolve = async (name: string) => {
    const stored = await readProvisioning(cluster.kubeConfig, cluster.namespace, name);
    return harness.deliver('host-lookup', sourceEvent('update', stored));
  };
  const nodeIp = async (name: string) =>
    (await readProvisioning(cluster.kubeConfig, cluster.namespace, name)).status?.nodes?.[0]?.ip;

  it('LeasesUnreadable: a lease path that cannot be read is a 503 and HostsResolved=Unknown, then recovers', async () => {
    await mkdir(leasePath); // exists (stat succeeds), but reading it fails with EISDIR
    await createProvisioning(
      cluster.kubeConfig,
      provisioningObject({
        name: 'unreadable',
        namespace: cluster.namespace,
        cluster: 'unreadable',
        masters: [{ label: 'm', mac }],
      }),
    );
    const failed = await resolve('unreadable');
    expect(failed.status).toBe(503);
    expect(errorOf(failed).reason).toBe('LeasesUnreadable');
    const condition = conditionOf(
      await readProvisioning(cluster.kubeConfig, cluster.namespace, 'unreadable'),
      'HostsResolved',
    );
    expect(condition).toMatchObject({ status: 'Unknown', reason: 'LeasesUnreadable' });
    expect(condition?.message).toContain(leasePath);

    await rm(leasePath, { recursive: true });
    await writeFile(leasePath, leaseBlock('127.0.0.21', mac));
    const retried = await resolve('unreadable');
    expect(retried.status).toBe(200);
    expect(retried.reply?.type).toBe('org.akraino.icn.bpa.hosts.resolved');
    expect(await nodeIp('unreadable')).toBe('127.0.0.21');
  });

  it('the lease cache: a lease file rewritten while host-lookup runs is read anew on the next event', async () => {
    await writeFile(leasePath, leaseBlock('127.0.0.31', movingMac));
    const created = await createProvisioning(
      cluster.kubeConfig,
      provisioningObject({
        name: 'moving',
        namespace: cluster.namespace,
        cluster: 'moving',
        masters: [{ label: 'm', mac: movingMac }],
      }),
    );
    expect((await resolve('moving')).status).toBe(200);
    expect(await nodeIp('moving')).toBe('127.0.0.31');

    // Each rewrite is a new generation of the Provisioning, so host-lookup resolves it again.
    let generation = created.metadata.generation;
    const bump = async (podSubnet: string) => {
      const api = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
      const stored = await readProvisioning(cluster.kubeConfig, cluster.namespace, 'moving');
      await api.replaceNamespacedCustomObject({
        group: 'bpa.akraino.org',
        version: 'v1alpha1',
        plural: 'provisionings',
        namespace: cluster.namespace,
        name: 'moving',
        body: { ...stored, spec: { ...stored.spec, PodSubnet: podSubnet } },
      });
      generation++;
    };
    const rewrites: [string, () => Promise<void>][] = [
      // In place, same size, right after the last read: same length, maybe the same mtime tick.
      ['in place, same size', () => writeFile(leasePath, leaseBlock('127.0.0.32', movingMac))],
      // As dhcpd does it: a new file renamed over the old one.
      [
        'renamed over',
        async () => {
          await writeFile(`${leasePath}~`, leaseBlock('127.0.0.33', movingMac));
          await rename(`${leasePath}~`, leasePath);
        },
      ],
      // A new lease appended for the same MAC (the last one decides).
      [
        'appended',
        async () =>
          writeFile(leasePath, leaseBlock('127.0.0.33', movingMac) + leaseBlock('127.0.0.134', movingMac)),
      ],
    ];
    const seen: string[] = [];
    for (const [, rewrite] of rewrites) {
      await rewrite();
      await bump(`10.${200 + seen.length}.0.0/16`);
      const delivery = await resolve('moving');
      expect(delivery.status).toBe(200);
      const stored = await readProvisioning(cluster.kubeConfig, cluster.namespace, 'moving');
      expect(conditionOf(stored, 'HostsResolved')).toMatchObject({
        status: 'True',
        observedGeneration: generation,
      });
      seen.push(String(stored.status?.nodes?.[0]?.ip));
    }
    expect(seen).toEqual(['127.0.0.32', '127.0.0.33', '127.0.0.134']);
  });
});

describe('ConfigMapConflict', () => {
  let proxy: ApiProxy;
  let harness: ChainHarness;
  const mac = 'aa:bb:cc:07:00:02';

  beforeAll(async () => {
    proxy = await startApiProxy(cluster.kubeConfig);
    await createBareMetalHost(cluster.kubeConfig, {
      name: 'conflict-host',
      namespace: cluster.namespace,
      bootMac: mac,
      nics: [{ name: 'eth0', mac, ip: '127.0.0.41' }],
    });
    harness = new ChainHarness(proxy.kubeConfig, {
      BMH_NAMESPACE: cluster.namespace,
      SWEEP_NAMESPACES: cluster.namespace,
      IP_SOURCES: 'nics',
    });
    await harness.start([hostLookup, inventoryRender]);
  });
  afterAll(async () => {
    await harness?.stop();
    await proxy?.close();
  });

  it('an inventory ConfigMap whose every write conflicts is a 503 and InventoryRendered=Unknown, then renders', async () => {
    const created = await createProvisioning(
      cluster.kubeConfig,
      provisioningObject({
        name: 'conflicted',
        namespace: cluster.namespace,
        cluster: 'conflicted',
        masters: [{ label: 'm', mac }],
      }),
    );
    const resolved = await harness.deliver('host-lookup', sourceEvent('add', created));
    expect(resolved.reply?.type).toBe('org.akraino.icn.bpa.hosts.resolved');

    const configMapWrites = new RegExp(`^/api/v1/namespaces/${cluster.namespace}/configmaps(/|\\?|$)`);
    const conflicts = proxy.failNext(
      (r) => ['POST', 'PUT', 'PATCH'].includes(r.method) && configMapWrites.test(r.url),
      409,
      Infinity,
    );
    const failed = await harness.deliver('inventory-render', resolved.reply!);
    proxy.clearFailures();
    expect(conflicts.failed).toBeGreaterThanOrEqual(2);
    expect(failed.status).toBe(503);
    expect(errorOf(failed)).toMatchObject({ reason: 'ConfigMapConflict' });
    expect(errorOf(failed).message).toContain('kept changing');
    const condition = conditionOf(
      await readProvisioning(cluster.kubeConfig, cluster.namespace, 'conflicted'),
      'InventoryRendered',
    );
    expect(condition).toMatchObject({ status: 'Unknown', reason: 'ConfigMapConflict' });

    const retried = await harness.deliver('inventory-render', resolved.reply!);
    expect(retried.status).toBe(200);
    expect(retried.reply?.type).toBe('org.akraino.icn.bpa.inventory.rendered');
    expect(
      conditionOf(
        await readProvisioning(cluster.kubeConfig, cluster.namespace, 'conflicted'),
        'InventoryRendered',
      ),
    ).toMatchObject({ status: 'True' });
  });
});

describeOnNode('KnownHostsUnreadable', () => {
  let lab: SshHosts;
  let harness: ChainHarness;
  let dir: string;

  beforeAll(async () => {
    lab = await startNodeSshHosts({ count: 1 });
    dir = await mkdtemp(join(tmpdir(), 'bpa-reasons-known-hosts-'));
    await addSshKeySecret(lab, 'ssh-key-keyless');
    await addClusterConfigMap('keyless', { MASTER_m: lab.hosts[0]!.ip });
    harness = new ChainHarness(cluster.kubeConfig, {
      SWEEP_NAMESPACES: cluster.namespace,
      SSH_KEY_SECRET: 'ssh-key-keyless',
      SSH_USER: lab.username,
      SSH_PORT: String(lab.port),
      SSH_KNOWN_HOSTS: join(dir, 'known_hosts'), // never written
    });
    await harness.start([softwareInstall]);
  });
  afterAll(async () => {
    await harness?.stop();
    await lab?.stopAll();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('a configured known_hosts that cannot be read is a 503 and Installed=Unknown, and no session', async () => {
    const software = await createSoftware(cluster.kubeConfig, cluster.namespace, 'keyless-tools', 'keyless');
    const delivery = await harness.deliver('software-install', sourceEvent('add', software));
    expect(delivery.status).toBe(503);
    expect(errorOf(delivery).reason).toBe('KnownHostsUnreadable');
    expect(errorOf(delivery).message).toContain(join(dir, 'known_hosts'));
    const installed = (
      await conditionsOf(cluster.kubeConfig, 'softwares', cluster.namespace, 'keyless-tools')
    ).find((c) => c.type === 'Installed');
    expect(installed).toMatchObject({ status: 'Unknown', reason: 'KnownHostsUnreadable' });
    expect(lab.hosts[0]!.commands()).toEqual([]);
  });

  // Regression (found by this suite): the generation used to be claimed before known_hosts was
  // read, so the failure left a claim behind and every retry answered 204 ("another instance is
  // installing") until it expired, about 11 minutes later.
  it('once the file is readable, the next retry installs', async () => {
    await writeFile(join(dir, 'known_hosts'), lab.knownHosts());
    const software = await getSoftware('keyless-tools');
    // The retry creates the install Job (204); the Job's recorded outcome is announced in answer
    // to the Software's update.
    const retried = await harness.publish(sourceEvent('update', software));
    expect(retried.map((d) => d.status)).toEqual([204, 200]);
    expect(replyTypes(retried)).toEqual(['org.akraino.icn.bpa.software.installed']);
    expect(lab.hosts[0]!.commands()).toHaveLength(1);
  });
});

/** An IP address as a regular expression's literal text. */
const escaped = (ip: string) => ip.replace(/\./g, '\\.');

/** A process's parent and process group, from /proc/<pid>/stat (fields after the command name). */
async function statOf(pid: number): Promise<{ parent: number; group: number }> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const [, parent, group] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { parent: Number(parent), group: Number(group) };
}

/**
 * The command a hanging host's session runs (its `sleep`, found by the server address in its
 * SSH_CONNECTION), as its process group (sshd makes the command a session leader) and the sshd
 * process that serves the connection (the nearest `sshd` above it). All are this test's.
 */
async function hangingSession(host: SshTestHost): Promise<{ group: number; sshd: number } | undefined> {
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmdline = await readFile(`/proc/${name}/cmdline`, 'utf8');
      if (!cmdline.startsWith('sleep\0')) continue;
      const environ = (await readFile(`/proc/${name}/environ`, 'utf8')).split('\0');
      const connection = environ.find((e) => e.startsWith('SSH_CONNECTION='))?.split(' ');
      if (connection?.[2] !== host.ip || connection[3] !== String(host.port)) continue;
      const { group } = await statOf(Number(name));
      let pid = Number(name);
      while (pid > 1 && !(await readFile(`/proc/${pid}/comm`, 'utf8')).startsWith('sshd'))
        pid = (await statOf(pid)).parent;
      if (pid > 1) return { group, sshd: pid };
    } catch {
      // Gone meanwhile.
    }
  }
  return undefined;
}

async function waitForHangingSession(host: SshTestHost) {
  for (let i = 0; i < 200; i++) {
    const found = await hangingSession(host);
    if (found) return found;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no session command started on ${host.ip}`);
}

const killQuietly = (pid: number) => {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
};

/** The command killed by a signal: its whole process group, so nothing holds the session's pipes. */
const killCommand = (session: { group: number }) => killQuietly(-session.group);
/** The server side of the connection gone mid-command; then the orphaned command too. */
const killServer = (session: { group: number; sshd: number }) => {
  killQuietly(session.sshd);
  setTimeout(() => killQuietly(-session.group), 2000);
};

describeOnNode('CommandKilled and SessionClosed', () => {
  let lab: SshHosts;
  let killed: SshTestHost;
  let dropped: SshTestHost;

  beforeAll(async () => {
    // On the node's lab network: the third test's install Job (a pod on the node) reaches them.
    lab = await startNodeSshHosts({
      count: 2,
      behaviours: [
        { kind: 'hang', seconds: 120 },
        { kind: 'hang', seconds: 120 },
      ],
    });
    [killed, dropped] = lab.hosts as [SshTestHost, SshTestHost];
  });
  afterAll(() => lab?.stopAll());

  const session = (host: SshTestHost) =>
    runSshCommand(
      {
        host: host.ip,
        port: host.port,
        username: lab.username,
        privateKey: lab.privateKey,
        hostKeyPolicy: { mode: 'known-hosts', knownHosts: lab.knownHosts() },
        connectTimeoutMs: 15_000,
        commandTimeoutMs: 60_000,
      },
      'apt-get install -y htop',
    );

  it('a command killed by a signal is CommandKilled, with the signal', async () => {
    const result = session(killed);
    killCommand(await waitForHangingSession(killed));
    const outcome = await result;
    expect(outcome.error).toEqual({
      reason: 'CommandKilled',
      message: `The command was killed by signal SIGKILL on ${killed.ip}:${killed.port}`,
    });
    expect(outcome).toMatchObject({ exitCode: null, signal: 'SIGKILL' });
  });

  it('a session whose server process dies mid-command is SessionClosed', async () => {
    const result = session(dropped);
    killServer(await waitForHangingSession(dropped));
    const outcome = await result;
    expect(outcome.error?.reason).toBe('SessionClosed');
    expect(outcome.error?.message).toMatch(
      new RegExp(`^The (SSH connection to|session on) ${escaped(dropped.ip)}:\\d+ closed`),
    );
    expect(outcome.exitCode).toBeNull();
  });

  it('through software-install, each host fails with its own message and the Software is InstallFailed', async () => {
    await addSshKeySecret(lab, 'ssh-key-cut');
    await addClusterConfigMap('cut', { MASTER_killed: killed.ip, WORKER_dropped: dropped.ip });
    const dir = await mkdtemp(join(tmpdir(), 'bpa-reasons-ssh-'));
    await writeFile(join(dir, 'known_hosts'), lab.knownHosts());
    const harness = new ChainHarness(cluster.kubeConfig, {
      SWEEP_NAMESPACES: cluster.namespace,
      SSH_KEY_SECRET: 'ssh-key-cut',
      SSH_USER: lab.username,
      SSH_PORT: String(lab.port),
      SSH_KNOWN_HOSTS: join(dir, 'known_hosts'),
      SSH_TIMEOUT_SECONDS: '60',
    });
    await harness.start([softwareInstall]);
    try {
      const software = await createSoftware(cluster.kubeConfig, cluster.namespace, 'cut-tools', 'cut');
      // The add creates the install Job; its pod opens the sessions killed here.
      const deliveries = harness.publish(sourceEvent('add', software));
      const [onKilled, onDropped] = await Promise.all([
        waitForHangingSession(killed),
        waitForHangingSession(dropped),
      ]);
      killCommand(onKilled);
      killServer(onDropped);
      const answered = await deliveries;
      expect(answered.map((d) => d.status)).toEqual([204, 200]);
      expect(replyTypes(answered)).toEqual(['org.akraino.icn.bpa.software.failed']);
      const stored = await getSoftware('cut-tools');
      expect(stored.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
        status: 'False',
        reason: 'InstallFailed',
      });
      const errors = Object.fromEntries((stored.status?.hosts ?? []).map((h) => [h.node, h.error ?? '']));
      expect(errors.killed).toMatch(
        new RegExp(`^The command was killed by signal SIGKILL on ${escaped(killed.ip)}:`),
      );
      expect(errors.dropped).toMatch(
        new RegExp(`^The (SSH connection to|session on) ${escaped(dropped.ip)}:\\d+ closed`),
      );
    } finally {
      await harness.stop();
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
