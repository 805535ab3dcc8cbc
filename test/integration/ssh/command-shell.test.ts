/**
 * The install command as real shells parse it: whatever valid words go in, apt-get receives
 * exactly those words as separate arguments, under sh (dash) and bash as the login shell; and
 * shellQuote keeps any string at all literal.
 */
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { buildInstallCommand, shellQuote } from '../../../functions/software-install/ssh/command.js';

const run = promisify(execFile);
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bpa-command-shell-'));
  // Stand-ins that show what a real host would have executed.
  await writeFile(join(dir, 'sudo'), '#!/bin/sh\n[ "$1" = -n ] || exit 99\nshift\nexec "$@"\n');
  await writeFile(
    join(dir, 'apt-get'),
    // `-o <option>` pairs (the dpkg lock timeout) come first; only the words after them matter here.
    '#!/bin/sh\nwhile [ "$1" = -o ]; do shift 2; done\n[ "$1" = update ] && exit 0\nprintf "%s\\n" "$DEBIAN_FRONTEND" > "$OUT"\nprintf "%s\\0" "$@" >> "$OUT"\n',
  );
  await chmod(join(dir, 'sudo'), 0o755);
  await chmod(join(dir, 'apt-get'), 0o755);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function aptArguments(shell: string, command: string): Promise<{ frontend: string; args: string[] }> {
  const out = join(dir, `out-${process.hrtime.bigint()}`);
  await run(shell, ['-c', command], { env: { PATH: `${dir}:/usr/bin:/bin`, OUT: out } });
  const text = await readFile(out, 'utf8');
  await rm(out);
  const newline = text.indexOf('\n');
  return {
    frontend: text.slice(0, newline),
    args: text
      .slice(newline + 1)
      .split('\0')
      .slice(0, -1),
  };
}

const nameChars = 'abcdefghijklmnopqrstuvwxyz0123456789+.-'.split('');
const versionChars = 'abcXYZ0123456789.+~:-'.split('');
const packageName = fc
  .tuple(fc.constantFrom(...'abz019'.split('')), fc.array(fc.constantFrom(...nameChars), { maxLength: 20 }))
  .map(([first, rest]) => first + rest.join(''))
  // A trailing "-" is apt-get's "remove" (InvalidPackageName, test/unit/ssh/detached.test.ts).
  .filter((name) => !name.endsWith('-'));
const packageVersion = fc
  .array(fc.constantFrom(...versionChars), { minLength: 1, maxLength: 20 })
  .map((c) => c.join(''))
  .filter((version) => !version.endsWith('-'));
const packageSpec = fc.record({ name: packageName, version: fc.option(packageVersion, { nil: undefined }) });

test.each(['/bin/sh', '/bin/bash'])(
  'under %s, apt-get install receives exactly the validated words',
  async (shell) => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(packageSpec, { minLength: 1, maxLength: 6 }),
        fc.boolean(),
        async (packages, root) => {
          const command = buildInstallCommand({ packages, username: root ? 'root' : 'ubuntu' });
          const words = [
            ...new Set(packages.map((p) => (p.version === undefined ? p.name : `${p.name}=${p.version}`))),
          ];
          const seen = await aptArguments(shell, command);
          expect(seen.frontend).toBe('noninteractive');
          expect(seen.args).toEqual(['install', '-y', '--', ...words]);
        },
      ),
      { numRuns: 40 },
    );
  },
);

test('shellQuote keeps any string literal, metacharacters and quotes included', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        fc.string({ unit: 'binary' }),
        fc.constantFrom("'; id; '", '$(id)', '`id`', 'a\'b"c', '\\', '\n-rf /', '$HOME', '*'),
      ),
      async (value) => {
        const literal = value.replace(/\0/g, '');
        const { stdout } = await run('/bin/sh', ['-c', `printf %s ${shellQuote(literal)}`], {
          encoding: 'buffer',
        });
        expect(stdout.toString()).toBe(Buffer.from(literal).toString());
      },
    ),
    { numRuns: 60 },
  );
});
