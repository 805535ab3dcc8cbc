/**
 * The install command for real: the real `apt-get` and `dpkg` of a real Debian root (mmdebstrap,
 * cached: scripts/debian-root.sh), reached through real OpenSSH sshd (ChrootDirectory, one mount
 * namespace per host: test/support/debian-host.ts) by the same ssh2 code the install Job runs.
 * Packages come from the root's local `file:` repository (hello, tree fetched at prereq time;
 * bpa-test-slow built there), so nothing leaves the machine. Concurrent installs are serialised
 * by the per-host Lease against the real kube-apiserver of the integration run.
 *
 * The install runs detached on the host (ssh/detached.ts): stopping the polling (the Software
 * deleted) or its timeout leaves dpkg running to its end and the root consistent, and a second
 * installer of the same install attaches to the running one instead of starting another apt.
 */
import { randomUUID } from 'node:crypto';
import { CoordinationV1Api } from '@kubernetes/client-node';
import { interruptedNotice } from '../../../functions/software-install/ssh/command.js';
import { HostLeases, hostLeaseName } from '../../../functions/software-install/host-lease.js';
import { runRetriedInstall } from '../../../functions/software-install/ssh/host-install.js';
import { planInstall, type InstallRunOptions } from '../../../functions/software-install/ssh/install.js';
import { runInstall } from '../../support/run-install.js';
import { useTestCluster } from '../../support/cluster.js';
import { startDebianHosts, type DebianHost, type DebianHosts } from '../../support/debian-host.js';

const cluster = useTestCluster();
let lab: DebianHosts;
let fresh: DebianHost;
let shared: DebianHost;
let unpackKilled: DebianHost;
let configureKilled: DebianHost;
let broken: DebianHost;
let deleted: DebianHost;
let timedOut: DebianHost;
let rerun: DebianHost;

beforeAll(async () => {
  lab = await startDebianHosts({ count: 8, firstAddress: 70 });
  [fresh, shared, unpackKilled, configureKilled, broken, deleted, timedOut, rerun] = lab.hosts as [
    DebianHost,
    DebianHost,
    DebianHost,
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
  pollIntervalMs: 300,
});
/** Each call is its own install (a new key), unless `key` names one: the same key attaches. */
const plan = (host: DebianHost, ...packages: string[]) => planFor(randomUUID(), host, ...packages);
const planFor = (key: string, host: DebianHost, ...packages: string[]) =>
  planInstall(
    [{ node: `node-${host.ip}`, ip: host.ip, packages: packages.map((name) => ({ name })) }],
    'root',
    30,
    key,
  );

/** Waits until a process of the host matches `running`. */
async function waitForProcess(host: DebianHost, running: RegExp): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if ((await host.processes()).some((p) => running.test(p.command))) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no process matching ${running} on ${host.ip}`);
}

/** Waits until no apt or dpkg runs on the host any more (the detached install ended). */
async function waitForNoDpkg(host: DebianHost): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (!(await host.processes()).some((p) => /apt-get|dpkg/.test(p.command))) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`apt or dpkg still running on ${host.ip}`);
}

const status = async (host: DebianHost, pkg: string) =>
  (await host.shell(`dpkg-query -W -f='\${Status}' ${pkg} 2>&1`)).stdout;

/** Waits until a process of the host matches, then SIGKILLs every apt/dpkg/maintainer-script process. */
async function killDpkgWhen(host: DebianHost, running: RegExp): Promise<string[]> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const processes = await host.processes();
    if (processes.some((p) => running.test(p.command))) {
      // The detached wrapper and script (under /var/lib/bpa-functions) too: a kill from outside.
      const victims = processes.filter((p) =>
        /apt-get|dpkg|bpa-test-slow|sleep|sh -c|\/var\/lib\/bpa-functions/.test(p.command),
      );
      for (const { pid } of victims) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch (error) {
          // Ended between the listing and the kill (a short-lived `sh -c` or `sleep`): nothing to kill.
          if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
        }
      }
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

it('the Software deleted during a slow install: polling stops at once, dpkg runs to its end, the root is consistent', async () => {
  await deleted.shell('mkdir -p /etc/bpa-test-slow && echo 6 > /etc/bpa-test-slow/postinst-seconds');
  const stop = new AbortController();
  const running = runRetriedInstall({
    ...runOptions(),
    hosts: plan(deleted, 'bpa-test-slow'),
    lock: { acquire: async () => ({ release: async () => undefined }) },
    signal: stop.signal,
  });
  await waitForProcess(deleted, /bpa-test-slow\.postinst configure/);
  stop.abort('the Software was deleted');
  const [result] = await running;
  expect(result?.error?.reason).toBe('PollingStopped');
  expect(result?.error?.message).toMatch(/left running on the host: dpkg is never killed/);
  expect(result?.attempts).toBe(1);
  // dpkg is still there, in the middle of the postinst, after the installer let go.
  expect((await deleted.processes()).some((p) => /dpkg/.test(p.command))).toBe(true);
  await waitForNoDpkg(deleted);
  expect(await status(deleted, 'bpa-test-slow')).toBe('install ok installed');
  expect((await deleted.shell('dpkg --audit')).stdout).toBe('');
  expect((await deleted.shell('cat /var/lib/bpa-functions/installs/*/exit')).stdout).toBe('0\n');
}, 180_000);

it('an SSH timeout during a slow install reports CommandTimeout and leaves dpkg to finish', async () => {
  await timedOut.shell('mkdir -p /etc/bpa-test-slow && echo 8 > /etc/bpa-test-slow/postinst-seconds');
  const [result] = await runInstall({
    ...runOptions(),
    commandTimeoutMs: 2000,
    hosts: plan(timedOut, 'bpa-test-slow'),
  });
  expect(result?.error?.reason).toBe('CommandTimeout');
  expect(result?.error?.message).toMatch(/left running on the host/);
  await waitForNoDpkg(timedOut);
  expect(await status(timedOut, 'bpa-test-slow')).toBe('install ok installed');
  expect((await timedOut.shell('dpkg --audit')).stdout).toBe('');
}, 180_000);

it('a re-run of the same install finds the detached one and polls it: one apt, its outcome', async () => {
  await rerun.shell('mkdir -p /etc/bpa-test-slow && echo 6 > /etc/bpa-test-slow/postinst-seconds');
  const key = `${randomUUID()}@1`;
  const stop = new AbortController();
  const first = runInstall({
    ...runOptions(),
    hosts: planFor(key, rerun, 'bpa-test-slow'),
    signal: stop.signal,
  });
  await waitForProcess(rerun, /bpa-test-slow\.postinst configure/);
  stop.abort('the install Job pod stopped');
  expect((await first)[0]?.error?.reason).toBe('PollingStopped');
  // The Job's next pod (or another Job of the same generation): the same plan attaches.
  const [second] = await runInstall({ ...runOptions(), hosts: planFor(key, rerun, 'bpa-test-slow') });
  expect(second?.error).toBeUndefined();
  expect(second?.exitCode).toBe(0);
  expect((second as { attached?: boolean }).attached).toBe(true);
  expect(second?.stdoutTail.join('\n')).toMatch(/Setting up bpa-test-slow/);
  // One install directory, one apt run: its log shows one unpack of the package.
  const dirs = (await rerun.shell('ls /var/lib/bpa-functions/installs')).stdout.trim().split('\n');
  expect(dirs).toHaveLength(1);
  const out = (await rerun.shell(`cat /var/lib/bpa-functions/installs/${dirs[0]}/out`)).stdout;
  expect(out.match(/Unpacking bpa-test-slow/g)).toHaveLength(1);
  expect(await status(rerun, 'bpa-test-slow')).toBe('install ok installed');
  expect((await rerun.shell('dpkg --audit')).stdout).toBe('');
  // Once it ended, the same install again is a new run (a retry re-runs apt).
  await rerun.shell('rm /etc/bpa-test-slow/postinst-seconds');
  const [third] = await runInstall({ ...runOptions(), hosts: planFor(key, rerun, 'bpa-test-slow') });
  expect(third?.error).toBeUndefined();
  expect((third as { attached?: boolean }).attached).toBe(false);
}, 180_000);
