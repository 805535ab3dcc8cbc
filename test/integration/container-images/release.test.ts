// The release workflow up to the push: .github/workflows/release.yml runs on a tag and calls
// scripts/release-images.sh, which this test runs with --dry-run (the same build, the same
// Component, the layouts crane would push; no registry is reached). The release's Component is
// rendered over manifests/ by the real kustomize: every Service and every Job image of bpa-config
// must name the registry by the digest that was built.
// Needs root (the images' Debian roots: mmdebstrap), npm and Go, as the workflow's container has.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';
import { kustomize, manifestsDir, parseObjects, repoRoot } from '../../unit/manifests/kustomize.js';

const root = process.getuid?.() === 0;
// Skipped only without root: the image build unpacks Debian roots as root (CI runs as root, so
// there it always runs).
const maybe = root ? describe : describe.skip;
if (!root) console.warn('container-images/release.test.ts skipped: building images needs root (mmdebstrap)');

const workflowSchema = z.object({
  on: z.object({ push: z.object({ tags: z.array(z.string()).min(1) }) }),
  permissions: z.object({ packages: z.literal('write') }),
  jobs: z.object({
    images: z.object({
      steps: z.array(z.object({ name: z.string().optional(), run: z.string().optional() })),
    }),
  }),
});

maybe('the release workflow, up to the push', () => {
  const work = mkdtempSync(join(tmpdir(), 'bpa-release-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('runs on a tag, the build and push through scripts/release-images.sh, with crane pinned', () => {
    const workflow = workflowSchema.parse(
      parse(readFileSync(join(repoRoot, '.github/workflows/release.yml'), 'utf8')),
    );
    expect(workflow.on.push.tags).toEqual(['v*']);
    const runs = workflow.jobs.images.steps.map((s) => s.run ?? '').join('\n');
    expect(runs).toMatch(/bash scripts\/release-images\.sh --repository /);
    expect(runs).toMatch(/go install github\.com\/google\/go-containerregistry\/cmd\/crane@v\d+\.\d+\.\d+/);
    expect(runs).toContain('npm run build');
  });

  it('builds every image and writes the release Component naming each by the digest built', () => {
    const out = join(work, 'release');
    execFileSync(
      'bash',
      [
        join(repoRoot, 'scripts/release-images.sh'),
        '--repository',
        'registry.example/bpa',
        '--out',
        out,
        '--dry-run',
      ],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    const images = z
      .record(
        z.string(),
        z.object({ name: z.string(), reference: z.string(), digest: z.string(), bytes: z.number() }),
      )
      .parse(JSON.parse(readFileSync(join(out, 'images', 'images.json'), 'utf8')));
    expect(Object.keys(images).sort()).toEqual(
      [
        'cleanup',
        'host-lookup',
        'image-upload',
        'image-verify',
        'inventory-render',
        'kud-job-launch',
        'kud-stand-in',
        'pause',
        'software-install',
      ].sort(),
    );
    for (const image of Object.values(images)) {
      console.log(`release image ${image.name}: ${(image.bytes / 2 ** 20).toFixed(1)} MiB ${image.digest}`);
      // The layout crane pushes holds exactly the manifest that was built.
      const index = JSON.parse(readFileSync(join(out, 'layouts', image.name, 'index.json'), 'utf8')) as {
        manifests: { digest: string }[];
      };
      expect(index.manifests.map((m) => m.digest)).toEqual([image.digest]);
    }
    const pushed = readFileSync(join(out, 'pushed.txt'), 'utf8').trim().split('\n').sort();
    expect(pushed).toEqual(
      Object.values(images)
        .map((i) => `${i.name} registry.example/bpa/${i.name}@${i.digest}`)
        .sort(),
    );

    // The Component over manifests/: Services and Jobs follow it.
    const overlay = join(work, 'overlay');
    mkdirSync(overlay);
    writeFileSync(
      join(overlay, 'kustomization.yaml'),
      `resources: [${relative(overlay, manifestsDir)}]\ncomponents: [${relative(overlay, join(out, 'kustomization'))}]\n`,
    );
    const objects = parseObjects(kustomize(overlay));
    const ref = (name: string) => `registry.example/bpa/${name}@${images[name]?.digest ?? 'missing'}`;
    const config = (
      objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'bpa-config') as unknown as {
        data: Record<string, string>;
      }
    ).data;
    expect([
      config.KUD_IMAGE,
      config.CLEANUP_IMAGE,
      config.KUBECONFIG_PUBLISHER_IMAGE,
      config.INSTALL_JOB_IMAGE,
    ]).toEqual([ref('kud-stand-in'), ref('cleanup'), ref('kud-job-launch'), ref('software-install')]);
    const services = objects.filter(
      (o) => o.kind === 'Service' && o.apiVersion.startsWith('serving.knative.dev/'),
    );
    for (const name of ['host-lookup', 'inventory-render', 'kud-job-launch', 'software-install']) {
      const service = services.find((s) => s.metadata.name === name) as unknown as {
        spec: { template: { spec: { containers: { image: string }[] } } };
      };
      expect(service.spec.template.spec.containers[0]?.image).toBe(ref(name));
    }
  });
});
