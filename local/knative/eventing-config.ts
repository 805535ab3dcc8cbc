import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { KubernetesObject } from '@kubernetes/client-node';
import { z } from 'zod';
import { BpaError } from '../../shared/errors.js';
import { readYamlObjects } from '../control-plane/apply.js';
import { repoRoot } from '../control-plane/repo-root.js';
import { knativeVersions } from './binaries.js';

/**
 * The parts of Knative Eventing's module this project installs, as a Knative release does
 * (`ko resolve -R -f` over each, hack/release.sh): the core (CRDs, controller, webhook, sources,
 * job sink, with the integration image ConfigMaps the release adds from third_party/, which the
 * controller's env reads), the in-memory channel and the MT channel broker.
 */
export const eventingConfigDirs = [
  'config/core',
  'third_party/eventing-integrations-latest',
  'config/channels/in-memory-channel',
  'config/brokers/mt-channel-broker',
] as const;

const moduleDownloadSchema = z.looseObject({ Dir: z.string().min(1) });

/** Where a Knative module's source is (downloaded through the Go module proxy when needed). */
export function knativeModuleDir(
  module: 'knative.dev/eventing' | 'knative.dev/serving',
  version: string,
): string {
  const wrapper = module === 'knative.dev/eventing' ? 'knative-eventing' : 'knative-serving';
  try {
    const out = execFileSync('go', ['mod', 'download', '-json', `${module}@${version}`], {
      cwd: join(repoRoot(), 'engines', wrapper),
      encoding: 'utf8',
      env: { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return moduleDownloadSchema.parse(JSON.parse(out)).Dir;
  } catch (error) {
    throw new BpaError(
      'KnativeSourceMissing',
      `cannot find ${module}@${version} through the Go module proxy (go mod download): ${String(error)}`,
      'internal',
    );
  }
}

/** Every `*.yaml` under `dir`, in path order (what `-R -f dir` reads). */
function yamlFiles(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((entry) => {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) return yamlFiles(path);
      return entry.endsWith('.yaml') ? [path] : [];
    });
}

/** Knative Eventing's objects from its module's config/, unchanged (image references are `ko://` paths). */
export function eventingConfigObjects(version = knativeVersions().eventing): KubernetesObject[] {
  const module = knativeModuleDir('knative.dev/eventing', version);
  return eventingConfigDirs.flatMap((dir) => yamlFiles(join(module, dir)).flatMap(readYamlObjects));
}
