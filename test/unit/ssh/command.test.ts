import {
  buildInstallCommand,
  packageSpecsFromItems,
  shellQuote,
} from '../../../functions/software-install/ssh/command.js';
import { packagesForRoles } from '../../../functions/software-install/ssh/install.js';

const script =
  "'" +
  String.raw`apt_get() { apt-get -o DPkg::Lock::Timeout=300 "$@"; }; apt_get update && { apt_get install -y -- "$@" || { rc=$?; [ -n "$(ls -A /var/lib/dpkg/updates 2>/dev/null)" ] || exit $rc; echo "bpa-functions: dpkg was interrupted by an earlier run; running dpkg --configure -a" >&2; dpkg --configure -a && apt_get install --reinstall -y -- "$@"; }; }` +
  "'";

test('root: the exact command text', () => {
  expect(
    buildInstallCommand({
      packages: [{ name: 'htop' }, { name: 'curl', version: '7.88.1' }],
      username: 'root',
    }),
  ).toBe(`env DEBIAN_FRONTEND=noninteractive sh -c ${script} sh 'htop' 'curl=7.88.1'`);
});

test('any other user: the same under sudo -n', () => {
  expect(buildInstallCommand({ packages: [{ name: 'htop' }], username: 'ubuntu' })).toBe(
    `sudo -n env DEBIAN_FRONTEND=noninteractive sh -c ${script} sh 'htop'`,
  );
});

test('identical words are installed once, in first-seen order', () => {
  expect(
    buildInstallCommand({
      packages: [{ name: 'b' }, { name: 'a' }, { name: 'b' }, { name: 'a', version: '1' }],
      username: 'root',
    }),
  ).toMatch(/ sh 'b' 'a' 'a=1'$/);
});

test('no packages is a caller bug, not a command', () => {
  expect(() => buildInstallCommand({ packages: [], username: 'root' })).toThrow(
    expect.objectContaining({ reason: 'NoPackages', kind: 'internal' }),
  );
});

test('over-long words are rejected', () => {
  expect(() => buildInstallCommand({ packages: [{ name: 'a'.repeat(257) }], username: 'root' })).toThrow(
    expect.objectContaining({ reason: 'InvalidPackageName', kind: 'invalid' }),
  );
  expect(() =>
    buildInstallCommand({ packages: [{ name: 'a'.repeat(256) }], username: 'root' }),
  ).not.toThrow();
});

test('spec items: names and {package: {version}} maps', () => {
  expect(packageSpecsFromItems(['htop', { curl: { version: '1' }, jq: { version: '2' } }])).toEqual([
    { name: 'htop' },
    { name: 'curl', version: '1' },
    { name: 'jq', version: '2' },
  ]);
  expect(() => packageSpecsFromItems([42])).toThrow(
    expect.objectContaining({ reason: 'InvalidSoftwareItem', kind: 'invalid' }),
  );
  expect(() => packageSpecsFromItems([{ curl: '1' }])).toThrow(expect.objectContaining({ kind: 'invalid' }));
});

test('roles: master list, then worker list', () => {
  const software = { masterSoftware: ['m'], workerSoftware: ['w'] };
  expect(packagesForRoles(['master'], software)).toEqual([{ name: 'm' }]);
  expect(packagesForRoles(['worker'], software)).toEqual([{ name: 'w' }]);
  expect(packagesForRoles(['master', 'worker'], software)).toEqual([{ name: 'm' }, { name: 'w' }]);
  expect(packagesForRoles(['worker'], { masterSoftware: ['m'] })).toEqual([]);
});

test('shellQuote', () => {
  expect(shellQuote('htop')).toBe(`'htop'`);
  expect(shellQuote(`it's`)).toBe(`'it'\\''s'`);
});
