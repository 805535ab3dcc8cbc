/**
 * Runs engines/gitops-check (built by `engines/build.sh gitops-check`: the real kstatus library,
 * cel-go as Flux's kustomize-controller runs healthCheckExprs, gopher-lua as Argo CD runs its Lua
 * health checks) on objects read back from the API server, with the expressions and scripts of
 * the shipped files manifests/gitops/flux-kustomization.yaml and manifests/gitops/argocd-cm.yaml.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';
import { repoRoot } from '../../../local/control-plane/repo-root.js';

const verdictSchema = z.object({
  status: z.string().optional(),
  message: z.string().optional(),
  error: z.string().optional(),
});
const outputSchema = z.object({
  results: z.array(
    z.object({ kstatus: verdictSchema, flux: verdictSchema.nullable(), argo: verdictSchema.nullable() }),
  ),
});
export type GitopsVerdicts = z.infer<typeof outputSchema>['results'][number];

const fluxSchema = z.object({
  kind: z.literal('Kustomization'),
  spec: z.object({
    healthCheckExprs: z.array(
      z.object({
        apiVersion: z.string(),
        kind: z.string(),
        current: z.string(),
        inProgress: z.string().optional(),
        failed: z.string().optional(),
      }),
    ),
  }),
});
const argoSchema = z.object({
  kind: z.literal('ConfigMap'),
  metadata: z.object({ name: z.literal('argocd-cm') }),
  data: z.record(z.string(), z.string()),
});
const healthKeyPrefix = 'resource.customizations.health.';

/** The shipped Flux expressions and Argo CD scripts, as the checker takes them. */
export function shippedHealthChecks(root = repoRoot()) {
  const read = (name: string) =>
    parse(readFileSync(join(root, 'manifests', 'gitops', name), 'utf8')) as unknown;
  const flux = fluxSchema.parse(read('flux-kustomization.yaml'));
  const argo = argoSchema.parse(read('argocd-cm.yaml'));
  const luaHealth = Object.fromEntries(
    Object.entries(argo.data)
      .filter(([key]) => key.startsWith(healthKeyPrefix))
      .map(([key, script]) => [key.slice(healthKeyPrefix.length), script]),
  );
  return { healthCheckExprs: flux.spec.healthCheckExprs, luaHealth };
}

let binary: string | undefined;
function checkerBinary(): string {
  if (binary) return binary;
  const root = repoRoot();
  // Cached per content hash; a cold build takes a few minutes (progress on stderr).
  const dir = execFileSync('bash', [join(root, 'engines', 'build.sh'), 'gitops-check'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  })
    .trim()
    .split('\n')
    .at(-1);
  binary = join(dir ?? '', 'gitops-check');
  return binary;
}

/** What kstatus, Flux (with the shipped healthCheckExprs) and Argo CD (the shipped Lua) say. */
export function judge(objects: readonly unknown[]): GitopsVerdicts[] {
  const out = execFileSync(checkerBinary(), [], {
    input: JSON.stringify({ objects, ...shippedHealthChecks() }),
    encoding: 'utf8',
  });
  return outputSchema.parse(JSON.parse(out)).results;
}

export const judgeOne = (object: unknown): GitopsVerdicts => {
  const [verdict] = judge([object]);
  if (!verdict) throw new Error('gitops-check returned no result');
  return verdict;
};
