/**
 * The KUD installer stand-in (local/kud-stand-in/installer) run as the KUD Job's container runs
 * it, against real OpenSSH hosts on 127.0.0.41-43 port 22 (the port a rendered inventory names),
 * whose sessions run Ansible's modules for real. Real Ansible (Debian's `ansible`) reads the
 * rendered inventory and runs the stand-in playbook (cluster.yml) against every host with the key,
 * printing genuine ansible-playbook output; needs root (sshd).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { renderHostsIni } from '../../../shared/core/inventory.js';
import type { ResolvedNode } from '../../../shared/schemas/node.js';
import { kudStandInInstaller, standInAdminConfMarker } from '../../../local/kud-stand-in/index.js';
import { startSshHosts, type SshHosts } from '../../support/sshd.js';

const run = promisify(execFile);
const cluster = 'stand-in-test';

let hosts: SshHosts;
let dir: string;
let multiCluster: string;
let keyPath: string;

const nodes = (): ResolvedNode[] =>
  [
    { label: 'master-1', roles: ['master'] as const },
    { label: 'master-2', roles: ['master'] as const },
    { label: 'worker-1', roles: ['worker'] as const },
  ].map((node, i) => ({
    ...node,
    roles: [...node.roles],
    mac: `52:54:00:00:00:0${i + 1}`,
    ip: hosts.hosts[i]!.ip,
    source: 'dhcp-leases' as const,
  }));

/** What the Job's command does before `./installer`: the inventory at its KUD path. */
async function placeInventory(text: string): Promise<void> {
  await mkdir(join(multiCluster, cluster), { recursive: true });
  await writeFile(join(multiCluster, cluster, 'hosts.ini'), text);
}

async function runInstaller(args: string[]) {
  try {
    const { stdout, stderr } = await run(kudStandInInstaller(), args, {
      env: {
        PATH: process.env.PATH,
        KUD_MULTI_CLUSTER_DIR: multiCluster,
        KUD_SSH_PRIVATE_KEY: keyPath,
        ANSIBLE_REMOTE_USER: hosts.username,
      },
      timeout: 90_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout: string; stderr: string };
    return { code: failed.code ?? -1, stdout: failed.stdout, stderr: failed.stderr };
  }
}

const adminConf = () => join(multiCluster, cluster, 'artifacts', 'admin.conf');

beforeAll(async () => {
  hosts = await startSshHosts({
    addresses: ['127.0.0.41', '127.0.0.42', '127.0.0.43'],
    count: 3,
    port: 22,
    behaviours: [{ kind: 'shell' }, { kind: 'shell' }, { kind: 'shell' }],
  });
  dir = await mkdtemp(join(tmpdir(), 'bpa-kud-stand-in-'));
  multiCluster = join(dir, 'multi-cluster');
  keyPath = join(dir, 'id_rsa');
  // As a Secret volume would show it: readable by others (the stand-in must cope).
  await writeFile(keyPath, hosts.privateKey, { mode: 0o644 });
}, 60_000);
afterAll(async () => {
  await hosts?.stopAll();
  if (dir) await rm(dir, { recursive: true, force: true });
});
beforeEach(async () => {
  await rm(multiCluster, { recursive: true, force: true });
});

test('every host answers: exit 0, each host ran the ping module, a marked admin.conf is written', async () => {
  await placeInventory(renderHostsIni({ clusterType: 'baremetal', nodes: nodes() }));
  const before = hosts.hosts.map((h) => h.commands().length);

  const result = await runInstaller([
    '--cluster',
    cluster,
    '--network',
    '10.244.64.0/18',
    '--plugins',
    'onap4k8s',
  ]);

  expect(result.stderr).not.toContain('FAILED');
  expect(result.code).toBe(0);
  expect(result.stdout).toContain('inventory read by Ansible: 3 host(s)');
  expect(result.stdout).toContain('master-2 127.0.0.42:22');
  // Genuine ansible-playbook output, the functions' progress source (contract section 14).
  expect(result.stdout).toContain('PLAY [Reach every host (kubespray bootstrap-os)]');
  expect(result.stdout).toMatch(/TASK \[Ping the host over SSH\] \*+\nok: \[/);
  expect(result.stdout).toMatch(/^worker-1 +: ok=\d+ +changed=0 +unreachable=0 +failed=0 /m);
  expect(result.stdout).toContain('all 3 host(s) answered');
  // Each sshd ran Ansible's module for real (its Python came over the session).
  hosts.hosts.forEach((host, i) => {
    const received = host.commands().slice(before[i]);
    expect(received.some((command) => command.includes('python'))).toBe(true);
  });
  const text = await readFile(adminConf(), 'utf8');
  expect(text.startsWith(standInAdminConfMarker)).toBe(true);
  const kubeconfig = parse(text) as {
    kind: string;
    clusters: { name: string; cluster: { server: string } }[];
    'current-context': string;
  };
  expect(kubeconfig.kind).toBe('Config');
  expect(kubeconfig.clusters[0]).toMatchObject({
    name: cluster,
    cluster: { server: 'https://127.0.0.41:6443' },
  });
  expect(kubeconfig['current-context']).toBe(`kubernetes-admin@${cluster}`);
});

test('a host that does not answer: non-zero exit naming it, no admin.conf', async () => {
  await placeInventory(renderHostsIni({ clusterType: 'baremetal', nodes: nodes() }));
  const down = hosts.hosts[1]!;
  await hosts.stop(down);
  try {
    const result = await runInstaller(['--cluster', cluster]);

    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(
      /FAILED: host\(s\) did not answer over SSH: master-2 \(ansible-playbook exit status \d+\)/,
    );
    expect(result.stdout).toMatch(/^fatal: \[master-2\]: UNREACHABLE! => /m);
    expect(result.stdout).toMatch(/^master-1 +: ok=\d+ .* unreachable=0 +failed=0 /m);
    expect(result.stdout).toMatch(/^master-2 +: ok=0 .* unreachable=1 /m);
    await expect(stat(adminConf())).rejects.toMatchObject({ code: 'ENOENT' });
  } finally {
    await hosts.restart(down);
  }
});

test("a host below kubespray's memory floor: the task fails for it, non-zero exit naming it", async () => {
  // As kubespray reads the floor: a host variable of the inventory overrides its default.
  const text = renderHostsIni({ clusterType: 'baremetal', nodes: nodes() }).replace(
    /^(worker-1 .*)$/m,
    '$1 minimal_node_memory_mb=1099511627776',
  );
  await placeInventory(text);

  const result = await runInstaller(['--cluster', cluster]);

  expect(result.code).not.toBe(0);
  expect(result.stderr).toMatch(
    /FAILED: host\(s\) failed a task: worker-1 \(ansible-playbook exit status 2\)/,
  );
  expect(result.stdout).toMatch(
    /TASK \[Stop if memory is too small for nodes\] \*+\n(skipping: .*\n)*fatal: \[worker-1\]: FAILED! => \{[^}]*a node needs 1099511627776/,
  );
  expect(result.stdout).toMatch(/^worker-1 +: ok=\d+ .* failed=1 /m);
  await expect(stat(adminConf())).rejects.toMatchObject({ code: 'ENOENT' });
});

test('a key the hosts do not accept: non-zero exit', async () => {
  await placeInventory(renderHostsIni({ clusterType: 'baremetal', nodes: nodes() }));
  const otherKey = join(dir, 'other_key');
  await rm(otherKey, { force: true });
  await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', otherKey]);
  const saved = keyPath;
  keyPath = otherKey;
  try {
    const result = await runInstaller(['--cluster', cluster]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('did not answer over SSH: master-1 master-2 worker-1');
  } finally {
    keyPath = saved;
  }
});

test('an inventory Ansible cannot use, or none: non-zero exit with the reason', async () => {
  let result = await runInstaller(['--cluster', cluster]);
  expect(result.code).toBe(1);
  expect(result.stderr).toContain(`FAILED: no inventory at ${join(multiCluster, cluster, 'hosts.ini')}`);

  await placeInventory('[all]\nmaster-1  ansible_ssh_host=127.0.0.41 ansible_ssh_port=22\n');
  result = await runInstaller(['--cluster', cluster]);
  expect(result.code).toBe(1);
  expect(result.stderr).toContain('FAILED: the inventory has no hosts in kube-master, kube-node, etcd');

  await placeInventory('[all\nmaster-1 = = =\n');
  result = await runInstaller(['--cluster', cluster]);
  expect(result.code).toBe(1);
  expect(result.stderr).toContain('FAILED: Ansible cannot read the inventory');
});

test('bad arguments: exit 2 with the usage', async () => {
  expect((await runInstaller([])).stderr).toContain('FAILED: no --cluster given');
  const unknown = await runInstaller(['--cluster', cluster, '--bogus']);
  expect(unknown.code).toBe(2);
  expect(unknown.stderr).toContain("unknown argument '--bogus'");
  expect((await runInstaller(['--cluster', '../etc'])).code).toBe(2);
});

describe('the day-2 paths (--scale, --remove-node): the inventory judged as Kubespray would', () => {
  const node = (label: string, role: 'master' | 'worker', i: number): ResolvedNode => ({
    label,
    roles: [role],
    mac: `52:54:00:00:01:0${i + 1}`,
    ip: hosts.hosts[i]!.ip,
    source: 'dhcp-leases',
  });
  const inventoryOf = (...list: ResolvedNode[]) => renderHostsIni({ clusterType: 'baremetal', nodes: list });
  const recorded = () => readFile(join(multiCluster, cluster, 'stand-in-installed'), 'utf8');

  test('scale joins a new worker (masters untouched), remove-node removes one still in the inventory', async () => {
    const master = node('master-1', 'master', 0);
    const worker1 = node('worker-1', 'worker', 2);
    const worker2 = node('worker-2', 'worker', 1);
    // No cluster installed yet: scale.yml has nothing to join.
    await placeInventory(inventoryOf(master, worker1, worker2));
    let result = await runInstaller(['--cluster', cluster, '--scale', 'worker-2']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('scale.yml changes an installed cluster, and none is recorded here');

    await placeInventory(inventoryOf(master, worker1));
    result = await runInstaller(['--cluster', cluster]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('PATH full install');
    expect(await recorded()).toBe('master master-1\nnode worker-1\n');

    await placeInventory(inventoryOf(master, worker1, worker2));
    result = await runInstaller(['--cluster', cluster, '--scale', 'worker-2', '--plugins', 'onap4k8s']);
    expect(result.stderr).not.toContain('FAILED');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(
      'PATH scale: facts.yml, then scale.yml --limit worker-2 (new workers worker-2; masters master-1 untouched)',
    );
    expect(await recorded()).toBe('master master-1\nnode worker-1\nnode worker-2\n');

    // remove-node.yml needs the node still in the inventory.
    await placeInventory(inventoryOf(master, worker2));
    result = await runInstaller(['--cluster', cluster, '--remove-node', 'worker-1']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'worker-1 is not in the inventory: remove-node.yml needs the node still there',
    );

    await placeInventory(inventoryOf(master, worker1, worker2));
    result = await runInstaller(['--cluster', cluster, '--remove-node', 'worker-1']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(
      'PATH remove-node: remove-node.yml -e node=worker-1 -e delete_nodes_confirmation=yes (removing worker-1)',
    );
    expect(await recorded()).toBe('master master-1\nnode worker-2\n');
  }, 120_000);

  test('fails where Kubespray would: a master by scale.yml, changed masters, the first master removed', async () => {
    const master = node('master-1', 'master', 0);
    const worker = node('worker-1', 'worker', 2);
    await placeInventory(inventoryOf(master, worker));
    expect((await runInstaller(['--cluster', cluster])).code).toBe(0);

    const master2 = node('master-2', 'master', 1);
    await placeInventory(inventoryOf(master, master2, worker));
    let result = await runInstaller(['--cluster', cluster, '--scale', 'master-2']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'the masters changed (master-1 installed, master-1,master-2 in the inventory)',
    );

    await placeInventory(inventoryOf(master, worker, node('worker-2', 'worker', 1)));
    result = await runInstaller(['--cluster', cluster, '--scale', 'worker-1']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('new worker(s) worker-2 in [kube-node] but not in --limit worker-1');

    await placeInventory(inventoryOf(master, worker));
    result = await runInstaller(['--cluster', cluster, '--remove-node', 'master-1']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('remove-node.yml cannot remove the first master master-1');

    expect((await runInstaller(['--cluster', cluster, '--scale', 'a,,b'])).code).toBe(2);
    expect((await runInstaller(['--cluster', cluster, '--scale', 'a', '--remove-node', 'b'])).code).toBe(2);
  }, 120_000);
});
