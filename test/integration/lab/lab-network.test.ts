/**
 * The demo lab's hosts on a real node's network (local/kubelet-node: containerd, kubelet,
 * kube-proxy, registered with a control plane of the test's own): real OpenSSH sshd daemons in
 * their own network namespaces, joined to the node's lab bridge (lab0 in the node's namespace,
 * 10.247.<i>.0/24), on port 22 (what a rendered inventory names). Checks what the demo needs: this
 * machine's namespace (where the embedded functions run) and the node's namespace (hostNetwork
 * pods, the KUD Job) both reach every host; a host reaches nothing off this machine; apt-get
 * commands are recorded and not run; Ansible's modules run; the KUD stand-in run inside the node's
 * namespace finds every host; the node's stop removes a lab it still carries. Root only: otherwise
 * it skips, saying why. (A pod reaching the hosts: test/integration/node/*.test.ts.)
 */
import { execFile } from 'node:child_process';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startControlPlane, type ControlPlane } from '../../../local/control-plane/index.js';
import { startKubeletNode, type KubeletNode } from '../../../local/kubelet-node/index.js';
import { createLabNetwork, type LabNetwork } from '../../../local/lab/lab-network.js';
import { startSshHosts, type SshHosts } from '../../../local/lab/openssh-hosts.js';
import { kudStandInInstaller } from '../../../local/kud-stand-in/index.js';
import { renderHostsIni } from '../../../shared/core/inventory.js';

const run = promisify(execFile);
const ip = (...args: string[]) => run('ip', args);

const notRoot = process.getuid?.() !== 0;
if (notRoot) process.stderr.write('[lab-network] skipping: the real node needs root (namespaces, cgroups)\n');
// Skipped only without root: the real node needs namespaces, cgroups and mounts (CI runs as root,
// so there it always runs); the reason is also printed on stderr.
const describeAsRoot = notRoot ? describe.skip : describe;

let controlPlane: ControlPlane;
let node: KubeletNode;
let network: LabNetwork;
let hosts: SshHosts;
let dir: string;

/** `nsenter --net` into the node's namespace: what a hostNetwork pod runs in. */
const inNode = (file: string, args: string[]) => [
  'nsenter',
  '--target',
  String(node.sandboxPid),
  '--net',
  '--',
  file,
  ...args,
];

async function sshFrom(where: 'machine' | 'node', host: string, command: string) {
  const ssh = [
    '-i',
    join(dir, 'id'),
    '-o',
    `UserKnownHostsFile=${join(dir, 'known_hosts')}`,
    '-o',
    'StrictHostKeyChecking=yes',
    '-o',
    'BatchMode=yes',
    '-o',
    'ConnectTimeout=5',
    `${hosts.username}@${host}`,
    command,
  ];
  const [file, ...args] = where === 'node' ? inNode('ssh', ssh) : ['ssh', ...ssh];
  return run(file!, args, { timeout: 30_000 });
}

describeAsRoot("the lab on the real node's lab bridge", () => {
  beforeAll(async () => {
    controlPlane = await startControlPlane({ handleSignals: false });
    node = await startKubeletNode({ controlPlane, clusterDns: false });
    network = await createLabNetwork(node.lab, [251, 252, 253]);
    hosts = await startSshHosts({
      count: network.hosts.length,
      addresses: network.hosts.map((h) => h.ip),
      netns: network.hosts.map((h) => h.netns),
      port: 22,
      behaviours: network.hosts.map(() => ({ kind: 'lab' as const })),
    });
    dir = await mkdtemp(join(tmpdir(), 'bpa-lab-network-'));
    await writeFile(join(dir, 'id'), hosts.privateKey, { mode: 0o600 });
    await writeFile(join(dir, 'known_hosts'), hosts.knownHosts());
  }, 120_000);

  afterAll(async () => {
    await hosts?.stopAll();
    await network?.remove();
    await node?.stop();
    await controlPlane?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 60_000);

  test("each host has its own namespace, an address of the node's lab /24, and routes only back through the node", async () => {
    const { subnetPrefix, gateway } = node.lab;
    const i = node.addresses.index;
    expect(subnetPrefix).toBe(`10.247.${i}`);
    expect(network.hosts.map((h) => h.ip)).toEqual(
      [251, 252, 253].map((octet) => `${subnetPrefix}.${octet}`),
    );
    expect(network.hosts.every((h) => h.netns.startsWith(`${node.addresses.hostInterface}-`))).toBe(true);
    for (const host of network.hosts) {
      const { stdout: routes } = await ip('-n', host.netns, 'route', 'show');
      expect(
        routes
          .trim()
          .split('\n')
          .map((line) => line.trim())
          .sort(),
      ).toEqual(
        [
          `${subnetPrefix}.0/24 dev eth0 proto kernel scope link src ${host.ip}`,
          `10.248.${i}.0/24 via ${gateway} dev eth0`,
          `10.249.${i}.1 via ${gateway} dev eth0`,
        ].sort(),
      );
    }
    expect(hosts.knownHosts()).toMatch(
      new RegExp(`^${subnetPrefix.replace(/\./g, '\\.')}\\.251 ssh-ed25519 `, 'm'),
    );
  });

  test('nothing off this machine is reachable from a host or from the node', async () => {
    const host = network.hosts[0]!;
    await expect(ip('-n', host.netns, 'route', 'get', '192.0.2.1')).rejects.toThrow(/unreachable/i);
    const [file, ...args] = inNode('ip', ['route', 'get', '192.0.2.1']);
    await expect(run(file!, args)).rejects.toThrow(/unreachable/i);
  });

  test("from this machine's namespace: apt-get is recorded and answered, not run; other commands run", async () => {
    const host = hosts.hosts[0]!;
    const apt = await sshFrom('machine', host.ip, "apt-get update && apt-get install -y 'no-such-package'");
    expect(apt.stdout).toContain(
      `[bpa demo lab host ${host.ip}: apt-get recorded, NOT run; nothing is installed]`,
    );
    expect(host.commands()).toContain("apt-get update && apt-get install -y 'no-such-package'");
    // A real command, run in the host's namespace: it sees its own address.
    const real = await sshFrom('machine', host.ip, 'ip -brief addr show eth0');
    expect(real.stdout).toContain(`${host.ip}/24`);
  });

  test("from the node's namespace (hostNetwork pods): every host answers", async () => {
    for (const host of hosts.hosts) {
      const { stdout } = await sshFrom('node', host.ip, 'hostname -I');
      expect(stdout.trim()).toBe(host.ip);
    }
  });

  test("the KUD stand-in, run in the node's namespace, reaches every host with Ansible", async () => {
    const multiCluster = join(dir, 'multi-cluster');
    await mkdir(join(multiCluster, 'lab'), { recursive: true });
    const labels = ['master-1', 'master-2', 'worker-1'];
    await writeFile(
      join(multiCluster, 'lab', 'hosts.ini'),
      renderHostsIni({
        clusterType: 'baremetal',
        nodes: hosts.hosts.map((host, i) => ({
          label: labels[i]!,
          roles: [i < 2 ? 'master' : 'worker'],
          mac: `52:54:00:00:00:0${i + 1}`,
          ip: host.ip,
          source: 'dhcp-leases',
        })),
      }),
    );
    const [file, ...args] = inNode(kudStandInInstaller(), ['--cluster', 'lab']);
    const { stdout } = await run(file!, args, {
      env: {
        PATH: process.env.PATH,
        KUD_MULTI_CLUSTER_DIR: multiCluster,
        KUD_SSH_PRIVATE_KEY: join(dir, 'id'),
        ANSIBLE_REMOTE_USER: hosts.username,
      },
      timeout: 90_000,
    });
    expect(stdout).toContain('all 3 host(s) answered');
    expect(await readFile(join(multiCluster, 'lab', 'artifacts', 'admin.conf'), 'utf8')).toContain(
      `server: https://${node.lab.subnetPrefix}.251:6443`,
    );
  });

  test("the node's stop removes the lab it still carries (its hosts' namespaces and sshd processes)", async () => {
    const { stdout: pids } = await ip('netns', 'pids', network.hosts[0]!.netns);
    const sshd = pids.split('\n').filter(Boolean).map(Number);
    expect(sshd.length).toBeGreaterThan(0);
    await node.stop();
    expect(node.leftovers()).toEqual([]);
    const { stdout } = await ip('netns', 'list');
    expect(stdout).not.toContain(`${node.addresses.hostInterface}-`);
    for (const pid of sshd) expect(() => process.kill(pid, 0)).toThrow();
  });
});
