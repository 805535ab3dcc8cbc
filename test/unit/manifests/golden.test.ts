import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
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
});
