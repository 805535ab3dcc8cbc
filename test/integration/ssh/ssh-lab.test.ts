import { planInstall, runInstall } from '../../../functions/software-install/ssh/install.js';
import { runSshCommand } from '../../../functions/software-install/ssh/session.js';
import { startLabSshServers } from '../../../local/lab/ssh-lab.js';
import type { LabSshServers } from '../../../local/lab/ssh-lab.js';
import { generateEd25519KeyPair } from '../../../local/lab/ssh-keys.js';

const clientKey = generateEd25519KeyPair();
let lab: LabSshServers;

beforeAll(async () => {
  lab = await startLabSshServers({
    hosts: [{ ip: '127.0.0.21' }, { ip: '127.0.0.22' }],
    authorizedPublicKey: clientKey.public,
    behaviours: { '127.0.0.22': { kind: 'fail', exitCode: 100, stderr: 'E: simulated failure' } },
  });
});
afterAll(() => lab?.stop());

test('the simulated hosts pass known_hosts checks, record commands and answer like apt (marked simulated)', async () => {
  const hosts = planInstall(
    [
      {
        node: 'master-1',
        ip: '127.0.0.21',
        packages: [{ name: 'htop' }, { name: 'curl', version: '7.88.1' }],
      },
      { node: 'worker-1', ip: '127.0.0.22', packages: [{ name: 'jq' }] },
    ],
    'root',
  );
  const results = await runInstall({
    hosts,
    port: lab.port,
    username: 'root',
    privateKey: clientKey.private,
    hostKeys: { mode: 'known-hosts', knownHosts: lab.knownHosts },
    connectTimeoutMs: 10000,
    commandTimeoutMs: 10000,
  });
  expect(results.map((r) => [r.exitCode, r.error?.reason, r.hostKeyFingerprint])).toEqual([
    [0, undefined, lab.hosts[0]?.hostKeyFingerprint],
    [100, 'CommandFailed', lab.hosts[1]?.hostKeyFingerprint],
  ]);
  expect(results[0]?.stdoutTail).toEqual([
    '[simulated host 127.0.0.21: nothing is installed, this is the bpa demo lab]',
    'Reading package lists... Done',
    'Building dependency tree... Done',
    'Reading state information... Done',
    'Setting up htop (latest) ... (simulated)',
    'Setting up curl (7.88.1) ... (simulated)',
  ]);
  expect(results[1]?.stderrTail).toEqual(['E: simulated failure']);
  // Hosts run in parallel: the order the lab records them in is not defined.
  const recorded = lab.commands().map((c) => [c.ip, c.username, c.command]);
  expect(recorded.sort((a, b) => String(a[0]).localeCompare(String(b[0])))).toEqual([
    ['127.0.0.21', 'root', hosts[0]?.command],
    ['127.0.0.22', 'root', hosts[1]?.command],
  ]);
});

test('the simulated hosts refuse any other client key', async () => {
  const other = generateEd25519KeyPair();
  const result = await runSshCommand(
    {
      host: '127.0.0.21',
      port: lab.port,
      username: 'root',
      privateKey: other.private,
      hostKeyPolicy: { mode: 'known-hosts', knownHosts: lab.knownHosts },
      connectTimeoutMs: 10000,
      commandTimeoutMs: 10000,
    },
    'true',
  );
  expect(result.error?.reason).toBe('AuthenticationFailed');
});
