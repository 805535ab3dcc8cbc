import { z } from 'zod';
import { BpaError, invalid } from '../../../shared/errors.js';

/**
 * The remote install command, built from validated package words.
 *
 * Exact form (tested byte for byte; users read it in status), with the lock timeout in seconds:
 *
 *   env DEBIAN_FRONTEND=noninteractive sh -c '<installScript(300)>' sh 'htop' 'curl=7.88.1'
 *
 * and, when the SSH user is not root, the same prefixed with `sudo -n `, so the whole of it
 * (environment, update and install) runs under sudo without ever prompting.
 *
 * Why this shape:
 * - The script text given to `sh -c` is a constant; the packages reach apt-get as positional
 *   parameters ("$@"), so no package word is ever parsed as shell text by the inner shell.
 * - Each word is also single-quoted (POSIX) for the outer login shell that sshd starts, on
 *   top of the validation below, which already excludes every shell metacharacter.
 * - `env` and `sh -c` work the same under any login shell (sh, bash, csh), unlike `export`.
 * - `--` ends apt-get's option parsing (checked with apt 2.6: after `--`, `-oFoo=1` is read as
 *   a package name); the name regex also forbids a leading `-`, so both guards hold.
 */

/**
 * Debian package names (contract section 2), never ending in `-`: apt-get reads a trailing `-` on
 * a word it finds no package for as "remove" (`apt-get install openssh-server-` removes sshd), a
 * trailing `+` as "install" (harmless, and real names such as `g++` end so). Contract section 12.
 */
export const packageNamePattern = /^[a-z0-9](?:[a-z0-9+.-]*[a-z0-9+.])?$/;
/**
 * Debian versions, epoch and tilde included (contract section 2); not ending in `-` either: apt
 * reads the modifier off the end of the whole word, so `curl=7.88-` is "remove curl 7.88" (and no
 * Debian version ends in `-`: a revision follows the last hyphen).
 */
export const packageVersionPattern = /^[A-Za-z0-9.+~:-]*[A-Za-z0-9.+~:]$/;
/** Longest name or version accepted: real ones are far shorter; this bounds the command size. */
export const maxPackageWordLength = 256;

export const packageSpecSchema = z.object({
  name: z.string(),
  version: z.string().optional(),
});
/** One package to install, optionally pinned to a version. */
export type PackageSpec = z.infer<typeof packageSpecSchema>;

/** A Software spec list item: `htop` or `{ curl: { version: '7.88.1' } }` (contract section 2). */
export const softwareItemSchema = z.union([
  z.string(),
  z.record(z.string(), z.object({ version: z.string() })),
]);
export type SoftwareItem = z.infer<typeof softwareItemSchema>;

/** Shows a rejected word readably and safely (quotes, newlines and control characters escaped). */
const show = (word: string) => JSON.stringify(word.length > 80 ? `${word.slice(0, 80)}…` : word);

function checkWord(word: string, pattern: RegExp, what: 'name' | 'version'): void {
  if (word.length > maxPackageWordLength || !pattern.test(word)) {
    const reason = what === 'name' ? 'InvalidPackageName' : 'InvalidPackageVersion';
    const rule =
      word.length > maxPackageWordLength
        ? `at most ${maxPackageWordLength} characters`
        : word.endsWith('-')
          ? `must not end with "-" (apt-get reads a trailing "-" as "remove this package")`
          : `must match ${pattern.source}`;
    throw invalid(reason, `Invalid package ${what} ${show(word)}: ${rule}`, { [what]: word });
  }
}

/** Validates one package and returns its apt word: `name` or `name=version`. Throws BpaError (invalid). */
export function packageWord(spec: PackageSpec): string {
  checkWord(spec.name, packageNamePattern, 'name');
  if (spec.version === undefined) return spec.name;
  checkWord(spec.version, packageVersionPattern, 'version');
  return `${spec.name}=${spec.version}`;
}

/** Turns Software spec items into package specs. A map item may name several packages. */
export function packageSpecsFromItems(items: readonly unknown[]): PackageSpec[] {
  return items.flatMap((item, index) => {
    const parsed = softwareItemSchema.safeParse(item);
    if (!parsed.success) {
      throw invalid(
        'InvalidSoftwareItem',
        `Software item ${index} must be a package name or a map {<package>: {version: <string>}}`,
      );
    }
    const value = parsed.data;
    if (typeof value === 'string') return [{ name: value }];
    return Object.entries(value).map(([name, { version }]) => ({ name, version }));
  });
}

/** POSIX single quoting: safe for any string, `'` becomes `'\''`. */
export function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** Seconds apt waits for the dpkg lock when it is not given (contract section 11). */
export const defaultLockTimeoutSeconds = 300;

/**
 * The script the inner `sh -c` runs; packages arrive as "$@", the only variable part is the lock
 * timeout (an integer). Three things beyond `apt-get update && apt-get install -y`:
 * - `-o DPkg::Lock::Timeout=<s>`: apt waits for the dpkg lock held by another apt (an unattended
 *   upgrade, an administrator) instead of failing at once. (apt's lists lock, taken by `update`,
 *   has no such wait: the per-host Lease serialises our own runs, retries cover a foreign one.)
 * - When the install fails and dpkg's journal (/var/lib/dpkg/updates) is not empty, an earlier run
 *   was killed in the middle of dpkg ("dpkg was interrupted"): run `dpkg --configure -a` once,
 *   say so on stderr, and install again with `--reinstall`: a package killed while unpacking
 *   (half-installed, which `--configure -a` cannot finish) is unpacked anew when it is asked for.
 * - Otherwise apt's own exit code is the script's.
 */
export function installScript(lockTimeoutSeconds: number = defaultLockTimeoutSeconds): string {
  if (!Number.isInteger(lockTimeoutSeconds) || lockTimeoutSeconds < 0)
    throw new RangeError(`lock timeout must be a whole number of seconds, got ${lockTimeoutSeconds}`);
  return [
    `apt_get() { apt-get -o DPkg::Lock::Timeout=${lockTimeoutSeconds} "$@"; }`,
    'apt_get update && { apt_get install -y -- "$@" || { rc=$?',
    '[ -n "$(ls -A /var/lib/dpkg/updates 2>/dev/null)" ] || exit $rc',
    `echo "${interruptedNotice}" >&2`,
    'dpkg --configure -a && apt_get install --reinstall -y -- "$@"; }; }',
  ].join('; ');
}

/** What the script prints on stderr before repairing an interrupted dpkg (status shows it). */
export const interruptedNotice =
  'bpa-functions: dpkg was interrupted by an earlier run; running dpkg --configure -a';

export interface InstallCommandInput {
  packages: readonly PackageSpec[];
  /** The SSH user: anyone but root gets `sudo -n`. */
  username: string;
  /** `-o DPkg::Lock::Timeout`; default defaultLockTimeoutSeconds. */
  lockTimeoutSeconds?: number;
}

/**
 * Validates every package, then renders the command (see the form at the top of this file).
 * Identical words are installed once, in first-seen order (a node in both roles gets both lists).
 * Throws BpaError (invalid) on the first bad word, so nothing is sent anywhere.
 */
export function buildInstallCommand({ packages, username, lockTimeoutSeconds }: InstallCommandInput): string {
  const words = [...new Set(packages.map(packageWord))];
  if (words.length === 0) {
    throw new BpaError(
      'NoPackages',
      'No packages to install: hosts without packages need no session',
      'internal',
    );
  }
  const command = [
    'env',
    'DEBIAN_FRONTEND=noninteractive',
    'sh',
    '-c',
    shellQuote(installScript(lockTimeoutSeconds)),
    'sh',
    ...words.map(shellQuote),
  ].join(' ');
  return username === 'root' ? command : `sudo -n ${command}`;
}
