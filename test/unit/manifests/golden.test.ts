import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { goldenDir, kustomize, kustomizeWithComponents, manifestsDir } from './kustomize.js';

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
    const rendered = render();
    const path = join(goldenDir, file);
    if (process.env.UPDATE_GOLDEN === '1') writeFileSync(path, rendered);
    expect(rendered).toBe(readFileSync(path, 'utf8'));
  });

  it('installs the CRDs from manifests/crds alone, unchanged but for the part-of label', () => {
    const crdsOf = (text: string) =>
      parseAllDocuments(text)
        .map((d) => d.toJS() as { kind: string; metadata: { name: string; labels?: Record<string, string> } })
        .filter((o) => o.kind === 'CustomResourceDefinition');
    // Contract section 13: `kubectl delete -k manifests/` removes the functions, never a CRD (and
    // with it every user's Provisionings, Softwares and Images); the image service's component
    // brings none either (host-lookup reads Images without it).
    expect(crdsOf(kustomize(manifestsDir))).toEqual([]);
    expect(crdsOf(kustomizeWithComponents(['image-service']))).toEqual([]);
    const rendered = parseAllDocuments(kustomize(join(manifestsDir, 'crds'))).map(
      (d) => d.toJS() as { kind: string; metadata: { name: string; labels?: Record<string, string> } },
    );
    expect(rendered.every((o) => o.kind === 'CustomResourceDefinition')).toBe(true);
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
