import { spawn } from 'node:child_process';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { BpaError } from '../../shared/errors.js';
import { isExecutable, pinnedVersion } from '../control-plane/assets.js';
import { repoRoot } from '../control-plane/repo-root.js';

/** The two Knative sets engines/build.sh builds (docs/knative.md). */
export type KnativeSet = 'knative' | 'knative-serving';

/** Every binary of a set, by the name `go build` gives its main package. */
export const knativeBinaries: Record<KnativeSet, readonly string[]> = {
  knative: [
    'apiserver_receive_adapter',
    'filter',
    'ingress',
    'controller',
    'event_display',
    'channel_controller',
    'channel_dispatcher',
    'jobsink',
    'mtchannel_broker',
    'mtping',
    'requestreply',
    'webhook',
  ],
  'knative-serving': ['webhook'],
};

/** `knative.dev/eventing` and `knative.dev/serving` as pinned in engines/versions.env. */
export function knativeVersions(root = repoRoot()) {
  return {
    eventing: pinnedVersion('KNATIVE_EVENTING_VERSION', root),
    serving: pinnedVersion('KNATIVE_SERVING_VERSION', root),
  };
}

/**
 * The directory holding a set's binaries, as engines/build.sh chooses it: the override
 * (KNATIVE_EVENTING_ASSETS, KNATIVE_SERVING_ASSETS) or the per-version cache. Keep in step with
 * build.sh.
 */
export function knativeBinaryDir(
  set: KnativeSet,
  env: NodeJS.ProcessEnv = process.env,
  root = repoRoot(),
): string {
  const versions = knativeVersions(root);
  const override = set === 'knative' ? env.KNATIVE_EVENTING_ASSETS : env.KNATIVE_SERVING_ASSETS;
  if (override) return override;
  const cacheHome = env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(
    cacheHome,
    'bpa-functions',
    set === 'knative' ? `knative-eventing-${versions.eventing}` : `knative-serving-${versions.serving}`,
  );
}

/** The set's binaries that are not there yet (empty: nothing to build). */
export function missingKnativeBinaries(set: KnativeSet, env: NodeJS.ProcessEnv = process.env): string[] {
  const dir = knativeBinaryDir(set, env);
  return knativeBinaries[set].filter((name) => !isExecutable(join(dir, name)));
}

/**
 * Makes sure a set is built: nothing to do when every binary is there, else `engines/build.sh
 * <set>` (a cold build takes minutes; its progress lines go to `onProgress`). Resolves with the
 * directory.
 */
export async function ensureKnativeBinaries(
  set: KnativeSet,
  options: { env?: NodeJS.ProcessEnv; onProgress?: (line: string) => void } = {},
): Promise<string> {
  const env = options.env ?? process.env;
  if (missingKnativeBinaries(set, env).length === 0) return knativeBinaryDir(set, env);
  const root = repoRoot();
  const code = await new Promise<number>((resolve, reject) => {
    const child = spawn('bash', [join(root, 'engines', 'build.sh'), set], {
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let buffered = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) if (line.trim()) options.onProgress?.(line);
    });
    child.on('error', reject);
    child.on('close', (status) => resolve(status ?? 1));
  });
  const missing = missingKnativeBinaries(set, env);
  if (code !== 0 || missing.length > 0)
    throw new BpaError(
      'KnativeBinariesMissing',
      `engines/build.sh ${set} ended with status ${code}; missing: ${missing.join(', ') || 'none'} in ${knativeBinaryDir(set, env)}`,
      'internal',
    );
  return knativeBinaryDir(set, env);
}
