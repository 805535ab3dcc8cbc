/**
 * Bad input, shell: no package word ever reaches a shell unescaped. For 1,000 generated package
 * lists (hostile names and versions mixed with valid ones), the SSH command builder either
 * refuses the list with a BpaError (invalid) naming the bad word, or produces a command that a
 * real POSIX shell runs with exactly the literal words: the produced command is run with
 * `sh -c` under a PATH whose `apt-get` prints its arguments one per line.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { BpaError } from '../../shared/errors.js';
import {
  buildInstallCommand,
  defaultLockTimeoutSeconds,
  packageNamePattern,
  packageVersionPattern,
  packageWord,
  type PackageSpec,
} from '../../functions/software-install/ssh/command.js';
import { FaultTally } from './report/tally.js';
import { hostileString, resilienceSeed, show } from './support/hostile.js';

const run = promisify(execFile);
const tally = new FaultTally(import.meta.url);

const validName = fc.stringMatching(/^[a-z0-9][a-z0-9+.-]{0,30}$/);
const validVersion = fc.stringMatching(/^[A-Za-z0-9.+~:-]{1,20}$/);
const packageSpec: fc.Arbitrary<PackageSpec> = fc.oneof(
  { arbitrary: fc.record({ name: validName }), weight: 3 },
  { arbitrary: fc.record({ name: validName, version: validVersion }), weight: 3 },
  { arbitrary: fc.record({ name: hostileString }), weight: 2 },
  { arbitrary: fc.record({ name: validName, version: hostileString }), weight: 2 },
);

const isValid = (spec: PackageSpec) =>
  spec.name.length <= 256 &&
  packageNamePattern.test(spec.name) &&
  (spec.version === undefined || (spec.version.length <= 256 && packageVersionPattern.test(spec.version)));

describe('the SSH install command and hostile package words', () => {
  let bin: string;
  beforeAll(async () => {
    bin = await mkdtemp(join(tmpdir(), 'bpa-fake-apt-'));
    // Stands in for apt-get: prints each argument on its own line, bracketed, so that
    // empty words and embedded spaces would show.
    await writeFile(join(bin, 'apt-get'), '#!/bin/sh\nfor a in "$@"; do printf "[%s]\\n" "$a"; done\n');
    await chmod(join(bin, 'apt-get'), 0o755);
  });
  afterAll(async () => rm(bin, { recursive: true, force: true }));

  it('refuses every list with a bad word before building anything, and a real shell sees exactly the accepted words', async () => {
    let refused = 0;
    let executed = 0;
    const accepted: { command: string; words: string[] }[] = [];
    await fc.assert(
      fc.asyncProperty(fc.array(packageSpec, { minLength: 1, maxLength: 5 }), async (packages) => {
        const valid = packages.every(isValid);
        let command: string | undefined;
        try {
          command = buildInstallCommand({ packages, username: 'root' });
        } catch (error) {
          const clean = error instanceof BpaError && error.kind === 'invalid' && !valid;
          tally.record('Bad input', clean);
          if (!clean) throw new Error(`unexpected refusal of ${show(packages)}`, { cause: error });
          expect((error as BpaError).reason).toMatch(/^InvalidPackage(Name|Version)$/);
          expect((error as BpaError).message).toMatch(/^Invalid package (name|version) "/);
          refused++;
          return;
        }
        if (!valid) {
          tally.record('Bad input', false);
          throw new Error(`a bad word was accepted: ${show(packages)} → ${command}`);
        }
        // sudo only prefixes the same command for other users.
        expect(buildInstallCommand({ packages, username: 'ubuntu' })).toBe(`sudo -n ${command}`);
        accepted.push({ command, words: [...new Set(packages.map(packageWord))] });
      }),
      { seed: resilienceSeed, numRuns: 1000 },
    );
    // One real shell runs every accepted command, each followed by a separator line.
    const separator = '--- end of command ---';
    const script = accepted.map(({ command }) => `${command}\necho '${separator}'`).join('\n');
    // From a file: a thousand commands exceed the kernel's limit for one argument.
    await writeFile(join(bin, 'commands.sh'), script);
    const { stdout } = await run('sh', [join(bin, 'commands.sh')], {
      env: { PATH: `${bin}:/usr/bin:/bin` },
      maxBuffer: 64 * 1024 * 1024,
    });
    const outputs = stdout.split(`${separator}\n`).slice(0, -1);
    expect(outputs).toHaveLength(accepted.length);
    const mismatches: unknown[] = [];
    accepted.forEach(({ command, words }, index) => {
      const lock = ['-o', `DPkg::Lock::Timeout=${defaultLockTimeoutSeconds}`];
      const expected = [...lock, 'update', ...lock, 'install', '-y', '--', ...words]
        .map((w) => `[${w}]\n`)
        .join('');
      const same = outputs[index] === expected;
      tally.record('Bad input', same);
      if (same) executed++;
      else mismatches.push({ command, output: outputs[index], expected });
    });
    expect(mismatches).toEqual([]);
    tally.note(
      `install command: ${refused} hostile package lists refused before any connection, ${executed} run by a real sh with exactly their words`,
    );
    expect(refused).toBeGreaterThan(100);
    expect(executed).toBeGreaterThan(100);
  }, 300_000);
});
