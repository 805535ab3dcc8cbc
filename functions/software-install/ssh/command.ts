import { z } from 'zod';
import { BpaError, invalid } from '../../../shared/errors.js';

/**
 * The remote install command, built from validated package words.
 *
 * Exact form (tested byte for byte; users read it in status):
 *
 *   env DEBIAN_FRONTEND=noninteractive sh -c 'apt-get update && apt-get install -y -- "$@"' sh 'htop' 'curl=7.88.1'
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

/** Debian package names (contract section 2). */
export const packageNamePattern = /^[a-z0-9][a-z0-9+.-]*$/;
/** Debian versions, epoch and tilde included (contract section 2). */
export const packageVersionPattern = /^[A-Za-z0-9.+~:-]+$/;
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

/** The constant script the inner `sh -c` runs; packages arrive as "$@". */
export const installScript = 'apt-get update && apt-get install -y -- "$@"';

export interface InstallCommandInput {
  packages: readonly PackageSpec[];
  /** The SSH user: anyone but root gets `sudo -n`. */
  username: string;
}

/**
 * Validates every package, then renders the command (see the form at the top of this file).
 * Identical words are installed once, in first-seen order (a node in both roles gets both lists).
 * Throws BpaError (invalid) on the first bad word, so nothing is sent anywhere.
 */
export function buildInstallCommand({ packages, username }: InstallCommandInput): string {
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
    shellQuote(installScript),
    'sh',
    ...words.map(shellQuote),
  ].join(' ');
  return username === 'root' ? command : `sudo -n ${command}`;
}
