/**
 * How the leases of a real provisioning network reach host-lookup (docs/deploy.md "Leases on a
 * real cluster"), against the real peers: dnsmasq (the DHCP server Metal3 runs in the Ironic pod)
 * serves DHCP on a veth pair between two network namespaces this test makes, busybox's udhcpc
 * (a real DHCP client) takes a lease in the other one, the lease publisher (this repository's
 * bundle dist/bundle/leases-publisher.mjs, the program host-lookup's image runs as the sidecar)
 * writes dnsmasq's lease file into the ConfigMap on the real kube-apiserver as the ServiceAccount
 * of manifests/leases-publisher (its RBAC applied as shipped), and host-lookup's
 * `configmap:<ns>/<name>/<key>` source reads it back to the MAC's address. Not imitated: the
 * Ironic pod itself (the publisher runs as a process here, not as a sidecar). Needs root.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { loadLeases, parseLeasesSource } from '../../../functions/host-lookup/lease-source.js';
import { waitFor } from '../../../local/control-plane/index.js';
import { kubeClients } from '../../../shared/k8s/clients.js';
import { silentLogger } from '../../../shared/log.js';
import { useTestCluster } from '../../support/cluster.js';
import { asServiceAccount } from '../../support/service-account-kubeconfig.js';
import { kubectl } from '../manifests/kubectl.js';
import { kustomize, manifestsDir, parseObjects, repoRoot } from '../../unit/manifests/kustomize.js';

const run = promisify(execFile);
const ip = (...args: string[]) => run('ip', args, { timeout: 30_000 });
const cluster = useTestCluster({ namespacePrefix: 'leases-publisher' });

// Names unique to this run (interface names: at most 15 characters).
const tag = String(process.pid % 100000);
const serverNetns = `bpaleases-s${tag}`;
const clientNetns = `bpaleases-c${tag}`;
const serverLink = `bls${tag}`;
const subnet = '10.213.77';
const configMapName = 'bpa-dhcp-leases';
const key = 'dnsmasq.leases';
const bundle = join(repoRoot, 'dist/bundle/leases-publisher.mjs');

let dir = '';
let leaseFile = '';
let publisherKubeconfig = '';
let dnsmasq: ChildProcess | undefined;
let publisher: ChildProcess | undefined;
let publisherLog = '';

const core = () => cluster.kubeConfig.makeApiClient(CoreV1Api);
const published = async () =>
  (await core().readNamespacedConfigMap({ name: configMapName, namespace: cluster.namespace })).data?.[key];

/** A DHCP exchange from the client namespace with `mac`: udhcpc's address, from its own output. */
async function takeLease(mac: string): Promise<string> {
  await ip('-n', clientNetns, 'link', 'set', 'eth0', 'down');
  await ip('-n', clientNetns, 'link', 'set', 'eth0', 'address', mac);
  await ip('-n', clientNetns, 'link', 'set', 'eth0', 'up');
  // -s /bin/true: take the lease, configure nothing; -q: exit once it is bound; -n: fail if none.
  const { stdout, stderr } = await run(
    'ip',
    [
      'netns',
      'exec',
      clientNetns,
      'busybox',
      'udhcpc',
      '-f',
      '-q',
      '-n',
      '-t',
      '20',
      '-T',
      '1',
      '-i',
      'eth0',
      '-s',
      '/bin/true',
    ],
    { timeout: 60_000 },
  );
  const address = /lease of (\d+\.\d+\.\d+\.\d+) obtained/.exec(stdout + stderr)?.[1];
  if (!address) throw new Error(`udhcpc took no lease:\n${stdout}${stderr}`);
  return address;
}

/** host-lookup's own read of LEASES_SOURCE=configmap:<ns>/bpa-dhcp-leases/dnsmasq.leases. */
async function hostLookupSees(mac: string) {
  const source = parseLeasesSource(`configmap:${cluster.namespace}/${configMapName}/${key}`);
  const index = await loadLeases(kubeClients(cluster.kubeConfig), source, silentLogger);
  return index?.byMac.get(mac);
}

beforeAll(async () => {
  for (const [what, path] of [
    ['dnsmasq (dnsmasq-base)', '/usr/sbin/dnsmasq'],
    ['busybox (udhcpc)', '/usr/bin/busybox'],
  ] as const)
    if (!existsSync(path)) throw new Error(`${what} is missing: scripts/prereqs.sh test installs it`);
  if (!existsSync(bundle)) throw new Error(`${bundle} is missing: run npm run build first`);
  dir = await mkdtemp(join(tmpdir(), 'bpa-leases-'));
  leaseFile = join(dir, 'dnsmasq.leases');

  // manifests/leases-publisher as shipped, moved into this file's namespace (it plays Ironic's).
  const objects = parseObjects(kustomize(join(manifestsDir, 'leases-publisher'))).map((object) => {
    const moved = structuredClone(object) as typeof object & {
      subjects?: { name: string; namespace?: string }[];
    };
    moved.metadata.namespace = cluster.namespace;
    for (const subject of moved.subjects ?? [])
      if (subject.name === 'bpa-leases-publisher') subject.namespace = cluster.namespace;
    return moved;
  });
  expect(objects.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual([
    'ConfigMap/bpa-dhcp-leases',
    'Role/bpa-functions:host-lookup-leases',
    'Role/bpa-leases-publisher',
    'RoleBinding/bpa-functions:host-lookup-leases',
    'RoleBinding/bpa-leases-publisher',
    'ServiceAccount/bpa-leases-publisher',
  ]);
  const applied = await kubectl(
    cluster.kubeconfigPath,
    ['apply', '-f', '-'],
    objects.map((o) => stringify(o)).join('---\n'),
  );
  expect({ code: applied.code, stderr: applied.stderr }).toEqual({ code: 0, stderr: '' });
  const account = await asServiceAccount(
    cluster.kubeConfig,
    cluster.namespace,
    'bpa-leases-publisher',
    new KubeConfig(),
  );
  publisherKubeconfig = join(dir, 'publisher.kubeconfig');
  await writeFile(publisherKubeconfig, account.exportConfig(), { mode: 0o600 });

  // The provisioning network: dnsmasq's namespace and a client's, joined by a veth pair.
  for (const netns of [serverNetns, clientNetns]) {
    await ip('netns', 'delete', netns).catch(() => undefined);
    await ip('netns', 'add', netns);
    await ip('-n', netns, 'link', 'set', 'lo', 'up');
  }
  await ip(
    'link',
    'add',
    serverLink,
    'netns',
    serverNetns,
    'type',
    'veth',
    'peer',
    'name',
    'eth0',
    'netns',
    clientNetns,
  );
  await ip('-n', serverNetns, 'addr', 'add', `${subnet}.1/24`, 'dev', serverLink);
  await ip('-n', serverNetns, 'link', 'set', serverLink, 'up');
  dnsmasq = spawn(
    'ip',
    [
      'netns',
      'exec',
      serverNetns,
      'dnsmasq',
      '--keep-in-foreground',
      '--conf-file=/dev/null',
      '--port=0',
      '--user=root',
      '--log-dhcp',
      `--interface=${serverLink}`,
      '--bind-interfaces',
      `--dhcp-range=${subnet}.50,${subnet}.99,12h`,
      `--dhcp-leasefile=${leaseFile}`,
      // Its own pid file: the default is shared with any other dnsmasq of the machine.
      `--pid-file=${join(dir, 'dnsmasq.pid')}`,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  publisher = spawn(
    process.execPath,
    [
      bundle,
      '--file',
      leaseFile,
      '--configmap',
      `${cluster.namespace}/${configMapName}/${key}`,
      '--interval',
      '0.2',
    ],
    {
      env: { ...process.env, KUBECONFIG: publisherKubeconfig, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  publisher.stdout?.on('data', (chunk: Buffer) => (publisherLog += chunk.toString()));
  publisher.stderr?.on('data', (chunk: Buffer) => (publisherLog += chunk.toString()));
}, 120_000);

afterAll(async () => {
  // `ip netns exec` execs dnsmasq: the child's pid is dnsmasq's.
  for (const child of [publisher, dnsmasq])
    if (child?.pid !== undefined && child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
  for (const netns of [serverNetns, clientNetns]) await ip('netns', 'delete', netns).catch(() => undefined);
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the lease publisher beside dnsmasq', () => {
  const first = '52:54:00:6c:00:01';
  const second = '52:54:00:6c:00:02';

  it("a real DHCP exchange reaches the ConfigMap, and host-lookup's configmap source gives the MAC's address", async () => {
    const address = await takeLease(first);
    expect(address).toMatch(new RegExp(`^${subnet.replace(/\./g, '\\.')}\\.(5\\d|[6-9]\\d)$`));
    await waitFor(async () => ((await published())?.includes(first) ? true : undefined), {
      what: `the lease of ${first} in ConfigMap ${configMapName} (publisher log: ${publisherLog})`,
      timeoutMs: 30_000,
      intervalMs: 200,
    });
    // dnsmasq's own file, as written, is what the ConfigMap holds.
    expect(await published()).toBe(await readFile(leaseFile, 'utf8'));
    expect(await hostLookupSees(first)).toBe(address);
  }, 90_000);

  it('a new lease is published again: both MACs resolve', async () => {
    const address = await takeLease(second);
    await waitFor(async () => ((await published())?.includes(second) ? true : undefined), {
      what: `the lease of ${second} in ConfigMap ${configMapName}`,
      timeoutMs: 30_000,
      intervalMs: 200,
    });
    expect(await hostLookupSees(second)).toBe(address);
    expect(await hostLookupSees(first)).toMatch(/^10\.213\.77\./);
    expect(publisherLog).toContain('"msg":"leases published"');
  }, 90_000);

  it('its ServiceAccount may patch that one ConfigMap and nothing else; host-lookup may read it', async () => {
    // Another ConfigMap of the namespace: the API server refuses the publisher (exit 1).
    const other = await new Promise<{ code: number | null; output: string }>((resolve) => {
      let output = '';
      const child = spawn(
        process.execPath,
        [bundle, '--file', leaseFile, '--configmap', `${cluster.namespace}/other/${key}`, '--once'],
        { env: { ...process.env, KUBECONFIG: publisherKubeconfig }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.on('exit', (code) => resolve({ code, output }));
    });
    expect(other.code).toBe(1);
    expect(other.output).toMatch(/leases not published/);
    expect(other.output).toMatch(/forbidden/i);
    const can = async (user: string, ...args: string[]) =>
      (
        await kubectl(cluster.kubeconfigPath, [
          'auth',
          'can-i',
          `--as=${user}`,
          '-n',
          cluster.namespace,
          ...args,
        ])
      ).stdout.trim();
    const publisherUser = `system:serviceaccount:${cluster.namespace}:bpa-leases-publisher`;
    const hostLookup = 'system:serviceaccount:bpa-system:host-lookup';
    expect([
      await can(publisherUser, 'patch', `configmap/${configMapName}`),
      await can(publisherUser, 'patch', 'configmap/other'),
      await can(publisherUser, 'create', 'configmaps'),
      await can(publisherUser, 'get', `configmap/${configMapName}`),
      await can(hostLookup, 'get', `configmap/${configMapName}`),
      await can(hostLookup, 'get', 'configmap/other'),
      await can(hostLookup, 'patch', `configmap/${configMapName}`),
    ]).toEqual(['yes', 'no', 'no', 'no', 'yes', 'no', 'no']);
  }, 60_000);
});
