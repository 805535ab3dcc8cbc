/**
 * The demo lab's hosts on a node's network: real OpenSSH sshd daemons in their own network
 * namespaces, joined to a bridge, on port 22 (what a rendered inventory names). The test makes its
 * own bridge and "node" namespace, laid out as local/node/network.ts lays out a node's (gateway .1
 * on the bridge, the node's namespace .2, no default route anywhere), then checks what the demo
 * needs: the functions' namespace (this one) and the node's namespace (hostNetwork pods, the KUD
 * Job) both reach every host; apt-get commands are recorded and not run; Ansible's modules run;
 * the KUD stand-in run inside the node's namespace finds every host. Needs root.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createLabNetwork, type LabNetwork } from '../../../local/lab/lab-network.js';
import { startSshHosts, type SshHosts } from '../../../local/lab/openssh-hosts.js';
import { kudStandInInstaller } from '../../../local/kud-stand-in/index.js';
import { renderHostsIni } from '../../../shared/core/inventory.js';

const run = promisify(execFile);
const ip = (...args: string[]) => run('ip', args);

const bridge = 'bpalabtbr0';
const subnetPrefix = '10.250.77';
const netnsPrefix = 'bpalabt-';
const nodeNetns = `${netnsPrefix}node`;

let network: LabNetwork;
let hosts: SshHosts;
let dir: string;

async function sshFrom(netns: string | undefined, host: string, command: string) {
  const ssh = [
    'ssh',
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
  const [file, ...args] = netns ? ['ip', 'netns', 'exec', netns, ...ssh] : ssh;
  return run(file!, args, { timeout: 30_000 });
}

beforeAll(async () => {
  await ip('link', 'delete', bridge).catch(() => undefined);
  await ip('netns', 'delete', nodeNetns).catch(() => undefined);
  await ip('link', 'add', bridge, 'type', 'bridge');
  await ip('addr', 'add', `${subnetPrefix}.1/24`, 'dev', bridge);
  await ip('link', 'set', bridge, 'up');
  await ip('netns', 'add', nodeNetns);
  await ip('link', 'add', 'bpa99n2', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', nodeNetns);
  await ip('link', 'set', 'bpa99n2', 'master', bridge, 'up');
  await ip('-n', nodeNetns, 'link', 'set', 'lo', 'up');
  await ip('-n', nodeNetns, 'addr', 'add', `${subnetPrefix}.2/24`, 'dev', 'eth0');
  await ip('-n', nodeNetns, 'link', 'set', 'eth0', 'up');

  network = await createLabNetwork({ bridge, subnetPrefix, netnsPrefix, slotIndex: 99 }, [251, 252, 253]);
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
}, 60_000);

afterAll(async () => {
  await hosts?.stopAll();
  await network?.remove();
  await ip('netns', 'delete', nodeNetns).catch(() => undefined);
  await ip('link', 'delete', bridge).catch(() => undefined);
  if (dir) await rm(dir, { recursive: true, force: true });
});

test('each host has its own namespace, its /24 address and no route beyond it', async () => {
  expect(network.hosts.map((h) => h.ip)).toEqual(['10.250.77.251', '10.250.77.252', '10.250.77.253']);
  for (const host of network.hosts) {
    const { stdout: routes } = await ip('-n', host.netns, 'route', 'show');
    expect(routes.trim()).toBe(`${subnetPrefix}.0/24 dev eth0 proto kernel scope link src ${host.ip}`);
  }
  expect(hosts.knownHosts()).toMatch(/^10\.250\.77\.251 ssh-ed25519 /m);
});

test("from this machine's namespace: apt-get is recorded and answered, not run; other commands run", async () => {
  const host = hosts.hosts[0]!;
  const apt = await sshFrom(undefined, host.ip, "apt-get update && apt-get install -y 'no-such-package'");
  expect(apt.stdout).toContain(
    `[bpa demo lab host ${host.ip}: apt-get recorded, NOT run; nothing is installed]`,
  );
  expect(host.commands()).toContain("apt-get update && apt-get install -y 'no-such-package'");
  // A real command, run in the host's namespace: it sees its own address.
  const real = await sshFrom(undefined, host.ip, 'ip -brief addr show eth0');
  expect(real.stdout).toContain(`${host.ip}/24`);
});

test("from the node's namespace (hostNetwork pods): every host answers", async () => {
  for (const host of hosts.hosts) {
    const { stdout } = await sshFrom(nodeNetns, host.ip, 'hostname -I');
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
  const { stdout } = await run(
    'ip',
    ['netns', 'exec', nodeNetns, kudStandInInstaller(), '--cluster', 'lab'],
    {
      env: {
        PATH: process.env.PATH,
        KUD_MULTI_CLUSTER_DIR: multiCluster,
        KUD_SSH_PRIVATE_KEY: join(dir, 'id'),
        ANSIBLE_REMOTE_USER: hosts.username,
      },
      timeout: 90_000,
    },
  );
  expect(stdout).toContain('all 3 host(s) answered');
  expect(await readFile(join(multiCluster, 'lab', 'artifacts', 'admin.conf'), 'utf8')).toContain(
    'server: https://10.250.77.251:6443',
  );
});
