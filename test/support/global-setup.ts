/**
 * One real etcd + kube-apiserver per integration run, with every CRD the project uses:
 * its own, Metal3's BareMetalHost and Knative's (from ../shared/* when the variables are unset).
 */
import { existsSync } from 'node:fs';
import Module from 'node:module';
import { resolve } from 'node:path';

/**
 * Jest loads global setup/teardown as CommonJS through its require hook (never as ESM), where
 * our `./x.js` import specifiers name files that exist only as `./x.ts`: map them, for
 * relative requests from the project's own files only.
 */
function resolveTsFromJsSpecifiers(): void {
  type Resolve = (request: string, parent: { filename?: string } | undefined, ...rest: unknown[]) => string;
  const loader = Module as unknown as { _resolveFilename: Resolve & { bpaTsMapping?: true } };
  const original = loader._resolveFilename;
  if (original.bpaTsMapping) return;
  const mapped: Resolve = function (this: unknown, request, parent, ...rest) {
    try {
      return original.call(this, request, parent, ...rest);
    } catch (error) {
      const fromProject = parent?.filename && !parent.filename.includes('/node_modules/');
      if (!fromProject || !request.startsWith('.') || !request.endsWith('.js')) throw error;
      return original.call(this, `${request.slice(0, -3)}.ts`, parent, ...rest);
    }
  };
  loader._resolveFilename = Object.assign(mapped, { bpaTsMapping: true as const });
}

const sharedCrdFolders = { METAL3_CRDS_DIR: 'metal3-crds', KNATIVE_CRDS_DIR: 'knative-crds' } as const;

export default async function globalSetup(): Promise<void> {
  resolveTsFromJsSpecifiers();
  const { projectCrds, repoRoot, startControlPlane } = await import('../../local/control-plane/index.js');
  const { keepControlPlane, testEnv } = await import('./control-plane-env.js');
  const root = repoRoot();
  for (const [variable, folder] of Object.entries(sharedCrdFolders)) {
    const candidate = resolve(root, '..', 'shared', folder);
    if (!process.env[variable] && existsSync(candidate)) process.env[variable] = candidate;
  }
  const crds = projectCrds(process.env, root);
  const controlPlane = await startControlPlane({
    crds: crds.inputs,
    // Progress only when asked: a stuck start then shows where it is.
    log: process.env.BPA_TEST_CONTROL_PLANE_VERBOSE
      ? (line) => process.stderr.write(`[control-plane] ${line}\n`)
      : undefined,
  });
  keepControlPlane(controlPlane);
  process.env[testEnv.kubeconfig] = controlPlane.kubeconfigPath;
  process.env[testEnv.server] = controlPlane.server;
  process.env[testEnv.assetsDir] = controlPlane.assetsDir;
  // Code under test that loads the default kubeconfig must reach this server, never a real one.
  process.env.KUBECONFIG = controlPlane.kubeconfigPath;
  // The functions' own namespace (FUNCTIONS_NAMESPACE's default): the cluster-name claims
  // live there, as they do in an install of manifests/.
  const { KubeConfig } = await import('@kubernetes/client-node');
  const { createNamespace } = await import('../../local/control-plane/index.js');
  const admin = new KubeConfig();
  admin.loadFromFile(controlPlane.kubeconfigPath);
  await createNamespace(admin, 'bpa-system', { 'app.kubernetes.io/part-of': 'bpa-functions' });
  const { apiserverReadyMs, crdsReadyMs } = controlPlane.timings;
  process.stderr.write(
    `\n[control-plane] ${controlPlane.server}: kube-apiserver ready after ${apiserverReadyMs} ms, ` +
      `CRDs (${crds.inputs.length} sources) served after ${crdsReadyMs} ms\n`,
  );
}
