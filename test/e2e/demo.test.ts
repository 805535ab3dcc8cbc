import { describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { repoRoot } from '../../local/control-plane/repo-root.js';
import { freeLoopbackPort } from '../../local/control-plane/free-port.js';
import { builtCli } from './support/built-cli.js';
import { ProcessOutput } from './support/process-output.js';

/** Env of the child: no test cluster, so the demo starts its own control plane as on a fresh machine. */
function isolatedEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  for (const name of Object.keys(env))
    if (name === 'KUBECONFIG' || name.startsWith('BPA_TEST_')) delete env[name];
  return env;
}

async function runDemoCli(args: string[]) {
  const cli = await builtCli();
  const child = spawn(process.execPath, [cli, 'demo', '--port', String(await freeLoopbackPort()), ...args], {
    cwd: repoRoot(),
    env: isolatedEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = new ProcessOutput(child);
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0)
    throw new Error(
      `bpa demo exited ${code}\n--- stdout ---\n${output.stdout}\n--- stderr ---\n${output.stderr}`,
    );
  return output.stdout;
}

/**
 * Where the demo runs, whichever engine carries the events: the real node (lab hosts on its lab
 * bridge, 10.247.<i>.<octet>).
 */
const nodeLine =
  /node\s+bpa-node \(real: containerd, kubelet, kube-proxy, CoreDNS\) at 10\.249\.\d+\.2: pods in 10\.248\.\d+\.0\/24/;
const labIp = (octet: number) => `10\\.247\\.\\d+\\.${octet}`;

/**
 * The demo's OS image went through the image service (tus upload, image-verify) and host-lookup
 * wrote it into spec.image of the three lab hosts: the Image line's sha256 is each host's checksum.
 */
function expectImageProvisioned(text: string) {
  const uploaded =
    /Image bpa-demo\/(edge-demo\.os\.\S+): demo-os\.img \((\d+) bytes, raw\) uploaded and verified, sha256 ([0-9a-f]{64})/.exec(
      text,
    );
  expect(uploaded).not.toBeNull();
  const [, name, , sha256] = uploaded!;
  expect(text).toMatch(new RegExp(`HostsResolved=True.*; image ${name!.replace(/\./g, '\\.')} on 3 hosts`));
  const hostLines = text.split('\n').filter((line) => line.includes(`/images/bpa-demo/${name}`));
  expect(hostLines).toHaveLength(3);
  for (const line of hostLines) expect(line).toMatch(new RegExp(`\\s${sha256}\\s+raw$`));
}

/** What a demo on the node shows, whichever engine carries the events. */
function expectWholeChainOnNode(text: string) {
  // It runs on the one-machine cluster and says what is real and what is not.
  expect(text).toMatch(/kube-controller-manager\s+pid \d+/);
  expect(text).toMatch(nodeLine);
  expect(text).toMatch(/real OpenSSH sshd hosts/);
  expect(text).toMatch(/apt-get is recorded, never run/);
  // Every step and every Provisioning condition, as it happened.
  for (const step of ['[1/6]', '[2/6]', '[3/6]', '[4/6]', '[5/6]', '[6/6] Summary'])
    expect(text).toContain(step);
  for (const type of ['HostsResolved', 'InventoryRendered', 'JobLaunched', 'KudInstalled', 'Ready'])
    expect(text).toMatch(new RegExp(`✓ ${type}=True`));
  expect(text).toMatch(/✓ Installed=True/);
  // The KUD Job really ran on the node: its pod's log (through the API server) is the stand-in's.
  expect(text).toMatch(/kubectl logs kud-edge-demo-\w+ \(the KUD installer stand-in\)/);
  expect(text).toMatch(new RegExp(`master-2 ${labIp(252)}:22`));
  // Genuine ansible-playbook output: worker-1 reached, and its PLAY RECAP line.
  expect(text).toMatch(/TASK \[Ping the host over SSH\][\s\S]*ok: \[worker-1\]/);
  expect(text).toMatch(/worker-1 +: ok=\d+ +changed=0 +unreachable=0 +failed=0/);
  expect(text).toContain('[kud-installer stand-in] all 3 host(s) answered');
  expect(text).toMatch(/KUD Job complete \(run on the node\), Ready/);
  // Both IP sources of the lab, and the IP ConfigMap.
  expect(text).toMatch(new RegExp(`master-1\\s+master\\s+52:54:00:b1:0a:01\\s+${labIp(251)}\\s+dhcp-leases`));
  expect(text).toMatch(new RegExp(`worker-1\\s+worker\\s+52:54:00:b1:0a:03\\s+${labIp(253)}\\s+host-nics`));
  expect(text).toMatch(
    new RegExp(`MASTER_master-1=${labIp(251)} MASTER_master-2=${labIp(252)} WORKER_worker-1=${labIp(253)}`),
  );
  // Per-host install results, from the sshd hosts.
  expect(text).toMatch(new RegExp(`master-1\\s+${labIp(251)}\\s+curl htop\\s+0\\s`));
  expect(text).toMatch(new RegExp(`worker-1\\s+${labIp(253)}\\s+curl jq=1\\.6-2\\.1\\s+0\\s`));
  expect(text).toMatch(/3 apt-get commands reached the sshd hosts \(recorded, not run\)/);
  expect(text).toMatch(/software edge-demo-tools: installed on 3\/3 hosts/);
  // On the node the install runs in its Job (contract section 11), not in a request.
  expect(text).toContain('Installing on 3 hosts in Job edge-demo-tools-install-1');
  // The OS image: uploaded, verified, named by the Provisioning and written into every host's spec.image.
  expectImageProvisioned(text);
  // No JSON log lines on the console.
  expect(text.split('\n').filter((line) => line.trimStart().startsWith('{"'))).toEqual([]);
}

describe('bpa demo (what npm start runs)', () => {
  it('runs a Provisioning and a Software through the whole chain on the node, with real sshd lab hosts, and exits 0', async () => {
    const text = await runDemoCli([]);
    expect(text).toMatch(/engine\s+embedded/);
    expectWholeChainOnNode(text);
    // Event deliveries of the embedded broker, one line each.
    expect(text).toMatch(/event hosts\.resolved → inventory-render-hosts-resolved\s+200/);
  }, 600_000);

  it('with --engine knative runs the same chain on real Knative Eventing: the functions as pods of the node', async () => {
    const text = await runDemoCli(['--engine', 'knative']);
    expect(text).toMatch(/engine\s+Knative Eventing v0\.49\.2 \(real\), \d+ objects Ready/);
    // The MT broker's ingress pod on the real node (ClusterIPs exist only inside the node).
    expect(text).toMatch(/broker\s+http:\/\/10\.248\.\d+\.\d+:8080\/bpa-system\/default/);
    // What the local Serving overlay cannot keep is said, not hidden.
    expect(text).toMatch(/serving overlay: host-lookup: timeoutSeconds 60 not enforced/);
    expectWholeChainOnNode(text);
    // No embedded broker ran: its delivery lines are absent.
    expect(text).not.toMatch(/event hosts\.resolved → /);
  }, 900_000);

  it('with --no-node runs on the control plane alone: simulated hosts, and it stops once the Job is launched', async () => {
    const text = await runDemoCli(['--no-node', '--quiet-events']);
    expect(text).toMatch(/node\s+none: pods stay Pending, no Job runs/);
    expect(text).toMatch(/a DHCP lease file naming 127\.0\.0\.N; no SSH server/);
    expect(text).toMatch(/✓ JobLaunched=True/);
    expect(text).not.toMatch(/KudInstalled=True/);
    expect(text).toContain('[5/6] Software bpa-demo/edge-demo-tools: skipped');
    expect(text).toMatch(/cluster edge-demo: 3 nodes resolved, inventory rendered, KUD Job launched/);
    expect(text).toMatch(/master-1\s+master\s+52:54:00:b1:0a:01\s+127\.0\.0\.11\s+dhcp-leases/);
    expectImageProvisioned(text);
  }, 600_000);
});
