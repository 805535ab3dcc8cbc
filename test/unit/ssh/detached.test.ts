import { packageWord } from '../../../functions/software-install/ssh/command.js';
import {
  installId,
  parsePollStatus,
  pollCommand,
  startCommand,
  statusPrefix,
} from '../../../functions/software-install/ssh/detached.js';
import { planInstall } from '../../../functions/software-install/ssh/install.js';
import { softwareItemSchema } from '../../../shared/schemas/software.js';
import { isOwned, ownedObjectsOf, withOwned } from '../../../shared/k8s/install-owned-objects.js';

test('a trailing "-" (apt-get: remove) is InvalidPackageName; real names ending in "+" pass', () => {
  for (const name of ['openssh-server-', 'a-', 'sudo--'])
    expect(() => packageWord({ name })).toThrow(
      expect.objectContaining({ reason: 'InvalidPackageName', message: expect.stringMatching(/remove/) }),
    );
  for (const name of ['g++', 'libstdc++6', 'a', 'python3.11', 'openssh-server'])
    expect(packageWord({ name })).toBe(name);
  expect(() => packageWord({ name: 'curl', version: '7.88-' })).toThrow(
    expect.objectContaining({ reason: 'InvalidPackageVersion' }),
  );
  expect(packageWord({ name: 'x', version: '1:2.0-1~bpo+1' })).toBe('x=1:2.0-1~bpo+1');
  // The Software's own schema says the same (the CRD pattern is the same text).
  expect(softwareItemSchema.safeParse('openssh-server-').success).toBe(false);
  expect(softwareItemSchema.safeParse({ 'openssh-server-': { version: '1' } }).success).toBe(false);
  expect(softwareItemSchema.safeParse('g++').success).toBe(true);
});

test('the install id: the same install on the same host is one id, anything else another', () => {
  const a = installId('ns/sw/uid@1', '10.0.0.1', ['htop']);
  expect(a).toMatch(/^[0-9a-f]{24}$/);
  expect(installId('ns/sw/uid@1', '10.0.0.1', ['htop'])).toBe(a);
  expect(installId('ns/sw/uid@2', '10.0.0.1', ['htop'])).not.toBe(a);
  expect(installId('ns/sw/uid@1', '10.0.0.2', ['htop'])).not.toBe(a);
  expect(installId('ns/sw/uid@1', '10.0.0.1', ['tree'])).not.toBe(a);
});

test('start and poll commands: packages are quoted words after the constant scripts; sudo -n for non-root', () => {
  const start = startCommand({ id: 'abc', words: ['htop', 'curl=1'], username: 'root' });
  expect(start).toMatch(/^env DEBIAN_FRONTEND=noninteractive sh -c '.*' sh 'abc' '.*' 'htop' 'curl=1'$/s);
  expect(start).toContain('setsid');
  expect(start).toContain('systemd-run');
  expect(startCommand({ id: 'abc', words: ['htop'], username: 'ubuntu' })).toMatch(/^sudo -n env /);
  expect(pollCommand('abc', 'root')).toMatch(/^sh -c '.*' sh 'abc'$/s);
  expect(pollCommand('abc', 'ubuntu')).toMatch(/^sudo -n sh -c /);
  const [plan] = planInstall([{ node: 'n', ip: '10.0.0.1', packages: [{ name: 'htop' }] }], 'root', 30, 'k');
  expect(plan?.installId).toBe(installId('k', '10.0.0.1', ['htop']));
  expect(plan?.command).toContain(`'${plan?.installId}'`);
});

test('poll status lines', () => {
  expect(parsePollStatus(['out', `${statusPrefix}exit 0`])).toEqual({ state: 'exit', exitCode: 0 });
  expect(parsePollStatus([`${statusPrefix}exit 100`])).toEqual({ state: 'exit', exitCode: 100 });
  expect(parsePollStatus([`${statusPrefix}running`])).toEqual({ state: 'running' });
  expect(parsePollStatus([`${statusPrefix}lost`])).toEqual({ state: 'lost' });
  expect(parsePollStatus(['Setting up htop'])).toEqual({ state: 'unreadable' });
  // A line of apt's own output that looks like a status is not the last word.
  expect(parsePollStatus([`${statusPrefix}exit 0`, `${statusPrefix}running`])).toEqual({ state: 'running' });
});

test('ownership by uid: only the recorded uid of that kind, namespace and name', () => {
  const entry = { kind: 'Role', namespace: 'ns', name: 'sw-installer', uid: 'u1' };
  const owner = { status: { ownedObjects: withOwned([], entry) } };
  expect(isOwned(owner, entry)).toBe(true);
  expect(isOwned(owner, { ...entry, uid: 'u2' })).toBe(false);
  expect(isOwned(owner, { ...entry, kind: 'RoleBinding' })).toBe(false);
  expect(isOwned({ status: {} }, entry)).toBe(false);
  expect(ownedObjectsOf({ status: { ownedObjects: [{ kind: 'Role' }, entry] } })).toEqual([entry]);
  expect(withOwned([entry], { ...entry, uid: 'u3' })).toEqual([{ ...entry, uid: 'u3' }]);
});
