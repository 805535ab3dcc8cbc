/**
 * The install command for real: the real `apt-get` and `dpkg` of a real Debian root (mmdebstrap,
 * cached: scripts/debian-root.sh), reached through real OpenSSH sshd (ChrootDirectory, one mount
 * namespace per host: test/support/debian-host.ts) by the same ssh2 code the install Job runs.
 * Packages come from the root's local `file:` repository (hello, tree fetched at prereq time;
 * bpa-test-slow built there), so nothing leaves the machine. Concurrent installs are serialised
 * by the per-host Lease against the real kube-apiserver of the integration run.
 */
import { randomUUID } from 'node:crypto';
import { CoordinationV1Api } from '@kubernetes/client-node';
import { interruptedNotice } from '../../../functions/software-install/ssh/command.js';
import { HostLeases, hostLeaseName } from '../../../functions/software-install/host-lease.js';
import { runRetriedInstall } from '../../../functions/software-install/ssh/host-install.js';
import {
  planInstall,
  runInstall,
  type InstallRunOptions,
} from '../../../functions/software-install/ssh/install.js';
import { useTestCluster } from '../../support/cluster.js';
import { startDebianHosts, type DebianHost, type DebianHosts } from '../../support/debian-host.js';

const cluster = useTestCluster();
let lab: DebianHosts;
let fresh: DebianHost;
let shared: DebianHost;
let unpackKilled: DebianHost;
let configureKilled: DebianHost;
let broken: DebianHost;

beforeAll(async () => {
  lab = await startDebianHosts({ count: 5, firstAddress: 70 });
  [fresh, shared, unpackKilled, configureKilled, broken] = lab.hosts as [
    DebianHost,
    DebianHost,
    DebianHost,
    DebianHost,
    DebianHost,
  ];
}, 300_000);
afterAll(() => lab?.stopAll());

const runOptions = (): Omit<InstallRunOptions, 'hosts'> => ({
  port: lab.port,
  username: 'root',
  privateKey: lab.privateKey,
  hostKeys: { mode: 'known-hosts', knownHosts: lab.knownHosts() },
  connectTimeoutMs: 10_000,
  commandTimeoutMs: 120_000,
});
const plan = (host: DebianHost, ...packages: string[]) =>
  planInstall(
    [{ node: `node-${host.ip}`, ip: host.ip, packages: packages.map((name) => ({ name })) }],
    'root',
    30,
  );

const status = async (host: DebianHost, pkg: string) =>
  (await host.shell(`dpkg-query -W -f='\${Status}' ${pkg} 2>&1`)).stdout;

/** Waits until a process of the host matches, then SIGKILLs every apt/dpkg/maintainer-script process. */
async function killDpkgWhen(host: DebianHost, running: RegExp): Promise<string[]> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const processes = await host.processes();
    if (processes.some((p) => running.test(p.command))) {
      const victims = processes.filter((p) => /apt-get|dpkg|bpa-test-slow|sleep|sh -c/.test(p.command));
      for (const { pid } of victims) process.kill(pid, 'SIGKILL');
      return victims.map((v) => v.command);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no process matching ${running} on ${host.ip}`);
}

it('a real package installs with the real apt-get through real sshd', async () => {
  expect(await status(fresh, 'hello')).toMatch(/no packages found/);
  const [result] = await runInstall({ ...runOptions(), hosts: plan(fresh, 'hello', 'tree') });
  expect(result?.error).toBeUndefined();
  expect(result?.exitCode).toBe(0);
  expect(result?.stdoutTail.join('\n')).toMatch(/Setting up (hello|tree)/);
  expect(await status(fresh, 'hello')).toBe('install ok installed');
  expect(await status(fresh, 'tree')).toBe('install ok installed');
  expect((await fresh.shell('hello')).stdout).toBe('Hello, world!\n');
}, 120_000);

it('a package apt does not know fails with apt’s own exit code and message', async () => {
  const [result] = await runInstall({ ...runOptions(), hosts: plan(fresh, 'no-such-package') });
  expect(result?.exitCode).toBe(100);
  expect(result?.error?.reason).toBe('CommandFailed');
  expect(result?.stderrTail.join('\n')).toMatch(/Unable to locate package no-such-package/);
}, 60_000);

it('two concurrent installs on the same root both succeed, one apt at a time (host Lease)', async () => {
  const leases = (holder: string) =>
    new HostLeases({
      kubeConfig: cluster.kubeConfig,
      namespace: cluster.namespace,
      holder,
      durationSeconds: 15,
      waitTimeoutMs: 120_000,
      pollMs: 200,
    });
  const first = `${cluster.namespace}/sw-a@1/${randomUUID().slice(0, 8)}`;
  const second = `${cluster.namespace}/sw-b@1/${randomUUID().slice(0, 8)}`;
  const [a, b] = await Promise.all([
    runRetriedInstall({ ...runOptions(), hosts: plan(shared, 'hello'), lock: leases(first) }),
    runRetriedInstall({ ...runOptions(), hosts: plan(shared, 'tree'), lock: leases(second) }),
  ]);
  for (const result of [a?.[0], b?.[0]]) {
    expect(result?.error).toBeUndefined();
    expect(result?.exitCode).toBe(0);
    expect(result?.attempts).toBe(1);
  }
  // One of them waited for the other's Lease: their sessions did not overlap.
  expect(Math.max(a?.[0]?.leaseWaitMs ?? 0, b?.[0]?.leaseWaitMs ?? 0)).toBeGreaterThan(0);
  expect(await status(shared, 'hello')).toBe('install ok installed');
  expect(await status(shared, 'tree')).toBe('install ok installed');
  // Released: the Lease names no holder, and changed hands once.
  const lease = await cluster.kubeConfig
    .makeApiClient(CoordinationV1Api)
    .readNamespacedLease({ name: hostLeaseName(shared.ip), namespace: cluster.namespace });
  expect(lease.spec?.holderIdentity).toBeUndefined();
  expect(lease.spec?.leaseTransitions).toBe(1);
}, 180_000);

it('dpkg killed while unpacking: the next install of the same Software repairs the root', async () => {
  await unpackKilled.shell('mkdir -p /etc/bpa-test-slow && echo 60 > /etc/bpa-test-slow/preinst-seconds');
  const interrupted = runInstall({ ...runOptions(), hosts: plan(unpackKilled, 'bpa-test-slow') });
  const killed = await killDpkgWhen(unpackKilled, /preinst install/);
  expect(killed.join('\n')).toMatch(/dpkg .*--unpack/);
  const [first] = await interrupted;
  expect(first?.exitCode).not.toBe(0);
  expect(first?.error).toBeDefined();
  expect(await status(unpackKilled, 'bpa-test-slow')).toBe('install reinstreq half-installed');

  await unpackKilled.shell('rm /etc/bpa-test-slow/preinst-seconds');
  const [next] = await runInstall({ ...runOptions(), hosts: plan(unpackKilled, 'bpa-test-slow') });
  expect(next?.error).toBeUndefined();
  expect(next?.stderrTail).toContain(interruptedNotice);
  expect(await status(unpackKilled, 'bpa-test-slow')).toBe('install ok installed');
  expect((await unpackKilled.shell('dpkg --audit')).stdout).toBe('');
}, 180_000);

it('dpkg killed while configuring: the next install (of another package) repairs the root', async () => {
  await configureKilled.shell('mkdir -p /etc/bpa-test-slow && echo 60 > /etc/bpa-test-slow/postinst-seconds');
  const interrupted = runInstall({ ...runOptions(), hosts: plan(configureKilled, 'bpa-test-slow') });
  await killDpkgWhen(configureKilled, /bpa-test-slow\.postinst configure/);
  await interrupted;
  expect(await status(configureKilled, 'bpa-test-slow')).toBe('install ok half-configured');

  await configureKilled.shell('rm /etc/bpa-test-slow/postinst-seconds');
  const [next] = await runInstall({ ...runOptions(), hosts: plan(configureKilled, 'hello') });
  expect(next?.error).toBeUndefined();
  expect(next?.stderrTail).toContain(interruptedNotice);
  expect(await status(configureKilled, 'bpa-test-slow')).toBe('install ok installed');
  expect(await status(configureKilled, 'hello')).toBe('install ok installed');
}, 180_000);

it('a root the repair cannot fix is reported with dpkg’s own words, not hidden', async () => {
  await broken.shell('mkdir -p /etc/bpa-test-slow && echo 60 > /etc/bpa-test-slow/postinst-seconds');
  const interrupted = runInstall({ ...runOptions(), hosts: plan(broken, 'bpa-test-slow') });
  await killDpkgWhen(broken, /bpa-test-slow\.postinst configure/);
  await interrupted;
  // Its postinst now fails: dpkg --configure -a cannot finish it.
  await broken.shell('rm /etc/bpa-test-slow/postinst-seconds && touch /etc/bpa-test-slow/postinst-fails');
  const [next] = await runInstall({ ...runOptions(), hosts: plan(broken, 'hello') });
  expect(next?.error?.reason).toBe('CommandFailed');
  expect(next?.exitCode).not.toBe(0);
  const stderr = next?.stderrTail.join('\n') ?? '';
  expect(stderr).toContain(interruptedNotice);
  expect(stderr).toMatch(/bpa-test-slow postinst: failing/);
  expect(stderr).toMatch(/dpkg: error processing package bpa-test-slow/);
  expect(await status(broken, 'hello')).toMatch(/no packages found/);
}, 180_000);
