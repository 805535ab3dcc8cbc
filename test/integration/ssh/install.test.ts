import { installId, startCommand } from '../../../functions/software-install/ssh/detached.js';
import { BpaError } from '../../../shared/errors.js';
import { packagesForRoles, planInstall } from '../../../functions/software-install/ssh/install.js';
import { runInstall } from '../../support/run-install.js';
import type {
  HostInstallTarget,
  InstallRunOptions,
} from '../../../functions/software-install/ssh/install.js';
import { startSshHosts } from '../../support/sshd.js';
import type { SshHosts, SshTestHost } from '../../support/sshd.js';

const software = {
  masterSoftware: ['htop', { curl: { version: '7.88.1-10+deb12u5' } }],
  workerSoftware: ['g++', { 'libstdc++6': { version: '1:12.2.0-14~bpo+1' } }, 'htop'],
};
const masterWords = ['htop', 'curl=7.88.1-10+deb12u5'];
const workerWords = ['g++', 'libstdc++6=1:12.2.0-14~bpo+1', 'htop'];
// Both roles: one session, both lists, htop once.
const bothWords = ['htop', 'curl=7.88.1-10+deb12u5', 'g++', 'libstdc++6=1:12.2.0-14~bpo+1'];
/** What the host receives: the detached install's start command (ssh/detached.ts), polls unrecorded. */
const startFor = (ip: string, words: string[], username = 'bpa-ssh-test') =>
  startCommand({ id: installId('', ip, words), words, username });

describe('as a non-root user', () => {
  let lab: SshHosts;
  let hosts: SshTestHost[];

  beforeAll(async () => {
    lab = await startSshHosts({
      count: 7,
      behaviours: [
        { kind: 'succeed' },
        { kind: 'succeed' },
        { kind: 'succeed' },
        { kind: 'succeed' },
        { kind: 'fail', exitCode: 100, stderr: 'E: Unable to locate package curl\nE: broken' },
        { kind: 'hang', seconds: 60 },
      ],
    });
    hosts = lab.hosts;
  });
  afterAll(() => lab?.stopAll());

  const target = (index: number, node: string, roles: ('master' | 'worker')[]): HostInstallTarget => ({
    node,
    ip: (hosts[index] as SshTestHost).ip,
    packages: packagesForRoles(roles, software),
  });
  const runOptions = (overrides: Partial<InstallRunOptions> = {}): Omit<InstallRunOptions, 'hosts'> => ({
    port: lab.port,
    username: lab.username,
    privateKey: lab.privateKey,
    hostKeys: { mode: 'known-hosts', knownHosts: lab.knownHosts() },
    connectTimeoutMs: 15000,
    // The hanging host times out after this; the others' detached installs (a start session, then
    // polls) must end well inside it on a loaded machine: 3 s failed under load.
    commandTimeoutMs: 10000,
    pollIntervalMs: 250,
    ...overrides,
  });

  test('each role gets exactly its command under sudo -n; a host down, failing, hanging or re-keyed fails only itself', async () => {
    const [master, worker, both, down, failing, hanging, rekeyed] = hosts as [
      SshTestHost,
      SshTestHost,
      SshTestHost,
      SshTestHost,
      SshTestHost,
      SshTestHost,
      SshTestHost,
    ];
    const knownHosts = lab.knownHosts();
    const recordedKey = rekeyed.hostKeyFingerprint;
    await lab.changeHostKey(rekeyed);
    await lab.stop(down);
    const planned = planInstall(
      [
        target(0, 'master-0', ['master']),
        target(1, 'worker-0', ['worker']),
        target(2, 'master-1', ['master', 'worker']),
        target(3, 'worker-down', ['worker']),
        target(4, 'worker-failing', ['worker']),
        target(5, 'worker-hanging', ['worker']),
        target(6, 'worker-rekeyed', ['worker']),
      ],
      lab.username,
    );
    const results = await runInstall({
      hosts: planned,
      ...runOptions({ hostKeys: { mode: 'known-hosts', knownHosts } }),
    });

    expect(results.map((r) => [r.node, r.ip, r.exitCode, r.error?.reason])).toEqual([
      ['master-0', master.ip, 0, undefined],
      ['worker-0', worker.ip, 0, undefined],
      ['master-1', both.ip, 0, undefined],
      ['worker-down', down.ip, null, 'ConnectFailed'],
      ['worker-failing', failing.ip, 100, 'CommandFailed'],
      ['worker-hanging', hanging.ip, null, 'CommandTimeout'],
      ['worker-rekeyed', rekeyed.ip, null, 'HostKeyChanged'],
    ]);
    expect(master.commands()).toEqual([startFor(master.ip, masterWords, lab.username)]);
    expect(worker.commands()).toEqual([startFor(worker.ip, workerWords, lab.username)]);
    expect(both.commands()).toEqual([startFor(both.ip, bothWords, lab.username)]);
    expect(failing.commands()).toEqual([startFor(failing.ip, workerWords, lab.username)]);
    expect(rekeyed.commands()).toEqual([]);
    expect(results.map((r) => r.command)).toEqual([
      startFor(master.ip, masterWords, lab.username),
      startFor(worker.ip, workerWords, lab.username),
      startFor(both.ip, bothWords, lab.username),
      startFor(down.ip, workerWords, lab.username),
      startFor(failing.ip, workerWords, lab.username),
      startFor(hanging.ip, workerWords, lab.username),
      startFor(rekeyed.ip, workerWords, lab.username),
    ]);
    const [, , , downResult, failingResult, hangingResult, rekeyedResult] = results;
    expect(downResult?.error?.message).toBe(`Cannot connect to ${down.ip}:${lab.port}: connection refused`);
    expect(failingResult?.stderrTail).toEqual(['E: Unable to locate package curl', 'E: broken']);
    expect(failingResult?.error?.message).toBe(
      `The command exited with code 100 on ${failing.ip}:${lab.port}: E: broken`,
    );
    // A host that answers no session: the start session times out (it only starts the install)
    // after commandTimeoutMs (ssh/detached.ts: the start session gets min(60 s, commandTimeoutMs)).
    expect(runOptions().commandTimeoutMs).toBe(10000);
    expect(hangingResult?.error?.message).toBe(
      `The command did not finish within 10s on ${hanging.ip}:${lab.port}; the session was closed`,
    );
    expect(rekeyedResult?.error?.message).toMatch(
      new RegExp(
        `^Host key verification failed for ${rekeyed.ip.replace(/\./g, '\\.')}: the host key has changed: `,
      ),
    );
    expect(rekeyedResult?.error?.message).toContain(
      `has ssh-ed25519 ${recordedKey} but the host presented ${rekeyed.hostKeyFingerprint}`,
    );
    for (const result of results.slice(0, 3)) expect(result.hostKeyFingerprint).toMatch(/^SHA256:/);
    await lab.restart(down);
  });

  test('trust on first use records fingerprints, then refuses only the host whose key changed', async () => {
    const [first, second] = hosts as [SshTestHost, SshTestHost];
    const planned = planInstall([target(0, 'a', ['master']), target(1, 'b', ['master'])], lab.username);
    const firstRun = await runInstall({
      hosts: planned,
      ...runOptions({ hostKeys: { mode: 'trust-on-first-use' } }),
    });
    expect(firstRun.map((r) => [r.exitCode, r.hostKeyFirstUse, r.hostKeyFingerprint])).toEqual([
      [0, true, first.hostKeyFingerprint],
      [0, true, second.hostKeyFingerprint],
    ]);
    const recorded = Object.fromEntries(firstRun.map((r) => [r.ip, r.hostKeyFingerprint as string]));

    await lab.changeHostKey(second);
    const secondCommands = second.commands().length;
    const secondRun = await runInstall({
      hosts: planned,
      ...runOptions({ hostKeys: { mode: 'trust-on-first-use', fingerprints: recorded } }),
    });
    expect(secondRun.map((r) => [r.exitCode, r.error?.reason, r.hostKeyFirstUse])).toEqual([
      [0, undefined, undefined],
      [null, 'HostKeyChanged', undefined],
    ]);
    expect(secondRun[1]?.error?.message).toContain(`expected ${recorded[second.ip]}`);
    expect(secondRun[1]?.error?.message).toContain(`presented ssh-ed25519 ${second.hostKeyFingerprint}`);
    expect(second.commands()).toHaveLength(secondCommands);
  });

  test.each([
    ['htop; rm -rf /', 'InvalidPackageName'],
    ['$(id)', 'InvalidPackageName'],
    ['-oProxyCommand=x', 'InvalidPackageName'],
    ['`id`', 'InvalidPackageName'],
    ['htop\nid', 'InvalidPackageName'],
    ['htop id', 'InvalidPackageName'],
    ["htop'", 'InvalidPackageName'],
    ['libc6:amd64', 'InvalidPackageName'],
    ['Htop', 'InvalidPackageName'],
    ['', 'InvalidPackageName'],
    // apt-get reads a trailing "-" as "remove": this would remove sshd from every node.
    ['openssh-server-', 'InvalidPackageName'],
  ])('package name %j is rejected before any connection', async (name, reason) => {
    const before = hosts.map((h) => h.commands().length);
    const attempt = () =>
      planInstall(
        [
          target(0, 'master-0', ['master']),
          { node: 'worker-0', ip: (hosts[1] as SshTestHost).ip, packages: [{ name: 'htop' }, { name }] },
        ],
        lab.username,
      );
    expect(attempt).toThrow(BpaError);
    expect(attempt).toThrow(
      expect.objectContaining({
        kind: 'invalid',
        reason,
        message: name.endsWith('-')
          ? `Invalid package name ${JSON.stringify(name)}: must not end with "-" (apt-get reads a trailing "-" as "remove this package")`
          : `Invalid package name ${JSON.stringify(name)}: must match ^[a-z0-9](?:[a-z0-9+.-]*[a-z0-9+.])?$`,
      }),
    );
    expect(hosts.map((h) => h.commands().length)).toEqual(before);
  });

  test.each(['1.0; id', '$(id)', '`id`', '1.0\nid', "1.0'", '1.0 -y', '', '1.0-'])(
    'version %j is rejected before any connection',
    (version) => {
      expect(() =>
        planInstall(
          [{ node: 'n', ip: (hosts[0] as SshTestHost).ip, packages: [{ name: 'curl', version }] }],
          'root',
        ),
      ).toThrow(expect.objectContaining({ kind: 'invalid', reason: 'InvalidPackageVersion' }));
    },
  );

  test('weird but valid words reach the host literally', async () => {
    const host = hosts[0] as SshTestHost;
    const packages = [
      { name: 'g++' },
      { name: 'libstdc++-12-dev', version: '2:12.2.0-14~deb12u1+b1' },
      { name: '0ad.data' },
      { name: 'x', version: '1.0+' },
    ];
    const [planned] = planInstall([{ node: 'n', ip: host.ip, packages }], lab.username);
    const [result] = await runInstall({ hosts: [planned!], ...runOptions() });
    expect(result?.exitCode).toBe(0);
    const words = ['g++', 'libstdc++-12-dev=2:12.2.0-14~deb12u1+b1', '0ad.data', 'x=1.0+'];
    expect(host.commands().at(-1)).toBe(startFor(host.ip, words, lab.username));
    expect(host.commands().at(-1)).toMatch(
      / 'g\+\+' 'libstdc\+\+-12-dev=2:12\.2\.0-14~deb12u1\+b1' '0ad\.data' 'x=1\.0\+'$/,
    );
  });
});

describe('as root', () => {
  let lab: SshHosts;
  beforeAll(async () => {
    lab = await startSshHosts({ count: 1, username: 'root' });
  });
  afterAll(() => lab?.stopAll());

  test('root gets the command without sudo', async () => {
    const host = lab.hosts[0] as SshTestHost;
    const planned = planInstall(
      [{ node: 'm', ip: host.ip, packages: packagesForRoles(['master'], software) }],
      'root',
    );
    const [result] = await runInstall({
      hosts: planned,
      port: lab.port,
      username: 'root',
      privateKey: lab.privateKey,
      hostKeys: { mode: 'known-hosts', knownHosts: lab.knownHosts() },
      connectTimeoutMs: 30000,
      commandTimeoutMs: 60000,
    });
    expect(result?.error).toBeUndefined();
    expect(host.commands()).toEqual([startFor(host.ip, masterWords, 'root')]);
    expect(host.commands()[0]).toMatch(/^env DEBIAN_FRONTEND=noninteractive sh -c /);
  });
});
