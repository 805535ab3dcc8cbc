import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { goldenDir, kustomize, kustomizeWithComponents, manifestsDir } from './kustomize.js';

/**
 * The CRDs belong to the control-plane work and change on their own schedule: the golden
 * keeps only their names, and the test below checks that the render carries them unchanged.
 */
function withCrdStubs(rendered: string): string {
  return rendered
    .split(/^---\n/m)
    .map((document) => {
      const object = parse(document) as { kind?: string; metadata?: { name?: string } };
      if (object.kind !== 'CustomResourceDefinition') return document;
      return [
        'apiVersion: apiextensions.k8s.io/v1',
        'kind: CustomResourceDefinition',
        'metadata:',
        `  name: ${object.metadata?.name}`,
        '# (rest as in manifests/crds/, checked by the test)',
        '',
      ].join('\n');
    })
    .join('---\n');
}

// The rendered install, byte for byte. After an intended change to manifests/, rewrite with
// UPDATE_GOLDEN=1 and review the diff of test/golden/manifests/ like code.
const cases: { file: string; render: () => string }[] = [
  { file: 'rendered.yaml', render: () => kustomize(manifestsDir) },
  { file: 'rendered-kafka.yaml', render: () => kustomizeWithComponents(['broker-kafka']) },
  { file: 'rendered-rabbitmq.yaml', render: () => kustomizeWithComponents(['broker-rabbitmq']) },
  { file: 'rendered-observability.yaml', render: () => kustomize(join(manifestsDir, 'observability')) },
];

describe('kubectl kustomize output', () => {
  it.each(cases)('matches test/golden/manifests/$file', ({ file, render }) => {
    const rendered = withCrdStubs(render());
    const path = join(goldenDir, file);
    if (process.env.UPDATE_GOLDEN === '1') writeFileSync(path, rendered);
    expect(rendered).toBe(readFileSync(path, 'utf8'));
  });

  it('carries the CRDs of manifests/crds/ unchanged but for the part-of label', () => {
    const rendered = parseAllDocuments(kustomize(manifestsDir))
      .map((d) => d.toJS() as { kind: string; metadata: { name: string; labels?: Record<string, string> } })
      .filter((o) => o.kind === 'CustomResourceDefinition');
    const sources = ['provisioning.yaml', 'software.yaml', 'image.yaml'].map(
      (file) => parse(readFileSync(join(manifestsDir, 'crds', file), 'utf8')) as typeof rendered[number],
    );
    expect(rendered.map((o) => o.metadata.name).sort()).toEqual(sources.map((o) => o.metadata.name).sort());
    for (const source of sources) {
      const withLabel = {
        ...source,
        metadata: {
          ...source.metadata,
          labels: { ...source.metadata.labels, 'app.kubernetes.io/part-of': 'bpa-functions' },
        },
      };
      expect(rendered.find((o) => o.metadata.name === source.metadata.name)).toEqual(withLabel);
    }
  });
});
