import { join } from 'node:path';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { BpaError } from '../../shared/errors.js';
export { onboardCommand } from '../../shared/k8s/api-errors.js';
import { applyObjects, readYamlObjects } from './apply.js';
import { repoRoot } from './repo-root.js';

/** The namespace the shipped tenant RoleBindings name as their subjects' (manifests/tenant). */
export const shippedFunctionsNamespace = 'bpa-system';

export interface OnboardOptions {
  /** Where the functions' ServiceAccounts live; default bpa-system (as manifests/tenant says). */
  functionsNamespace?: string;
  /** A prefix on the role names, as a test's rendering of manifests/ adds (`namePrefix`). */
  namePrefix?: string;
  /** The manifests directory; default the repository's. */
  manifestsDir?: string;
}

type RoleBinding = KubernetesObject & {
  roleRef: { apiGroup: string; kind: string; name: string };
  subjects: { kind: string; name: string; namespace?: string }[];
};

/**
 * The RoleBindings of manifests/tenant for `namespace`: what `kubectl apply -n <namespace> -k
 * manifests/tenant` creates, with the subjects in `functionsNamespace` and the names prefixed as
 * the install was. Read from the file, so the tests and the local engines onboard exactly as an
 * operator does.
 */
export function tenantRoleBindings(namespace: string, options: OnboardOptions = {}): RoleBinding[] {
  const dir = join(options.manifestsDir ?? join(repoRoot(), 'manifests'), 'tenant');
  const prefix = options.namePrefix ?? '';
  const bindings = readYamlObjects(join(dir, 'rolebindings.yaml')) as RoleBinding[];
  if (bindings.length === 0 || bindings.some((b) => b.kind !== 'RoleBinding'))
    throw new BpaError(
      'TenantManifestsInvalid',
      `${dir}/rolebindings.yaml holds other than RoleBindings`,
      'invalid',
    );
  return bindings.map((b) => ({
    ...b,
    metadata: {
      ...b.metadata,
      name: `${prefix}${b.metadata?.name ?? ''}`,
      namespace,
      labels: { ...b.metadata?.labels, 'app.kubernetes.io/part-of': 'bpa-functions' },
    },
    roleRef: { ...b.roleRef, name: `${prefix}${b.roleRef.name}` },
    subjects: b.subjects.map((s) => ({
      ...s,
      name: `${prefix}${s.name}`,
      namespace: options.functionsNamespace ?? s.namespace ?? shippedFunctionsNamespace,
    })),
  }));
}

/**
 * Onboards a tenant namespace (docs/adr/0013-tenancy.md point 4): binds there what each function
 * writes in a tenant's namespace. Every place that makes a namespace in which the functions act as
 * their ServiceAccounts calls this (the tests, `bpa demo`/`bpa dev`, both engines). Idempotent.
 */
export async function onboardNamespace(
  kubeConfig: KubeConfig,
  namespace: string,
  options: OnboardOptions = {},
) {
  await applyObjects(kubeConfig, tenantRoleBindings(namespace, options));
}
