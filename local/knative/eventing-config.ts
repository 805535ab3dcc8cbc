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

/** `path` itself when it is a file, else every `*.yaml` under it, in path order (what `-R -f` reads). */
function yamlFiles(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path)
    .sort()
    .flatMap((entry) => {
      const child = join(path, entry);
      if (statSync(child).isDirectory()) return yamlFiles(child);
      return entry.endsWith('.yaml') ? [child] : [];
    });
}

/**
 * The objects of a Knative module's YAML, unchanged (image references are `ko://` paths), from
 * `paths` inside the module (directories, read recursively, or single files), in that order.
 */
export function knativeConfigObjects(
  module: 'knative.dev/eventing' | 'knative.dev/serving',
  version: string,
  paths: readonly string[],
): KubernetesObject[] {
  const dir = knativeModuleDir(module, version);
  return paths.flatMap((path) => yamlFiles(join(dir, path)).flatMap(readYamlObjects));
}

/** Knative Eventing's objects from its module's config/, unchanged (image references are `ko://` paths). */
export function eventingConfigObjects(version = knativeVersions().eventing): KubernetesObject[] {
  return knativeConfigObjects('knative.dev/eventing', version, eventingConfigDirs);
}
