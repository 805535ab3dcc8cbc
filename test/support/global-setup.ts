/**
 * One one-machine cluster per integration (and resilience) run: etcd, kube-apiserver,
 * kube-controller-manager and kube-scheduler (Kubernetes' own), and one real node (containerd,
 * kubelet, kube-proxy, CoreDNS: local/stack/real-cluster.ts, docs/node.md) holding the
 * project's images and the suites' test images (local/images/test-images.ts), with every CRD the
 * project uses: its own, Metal3's BareMetalHost and Knative's (from ../shared/* when the variables
 * are unset). So Jobs really run, from images, and end by the real Job controller. Without root
 * it says so in one line and starts the control plane alone; suites that need the node then skip
 * (test/support/node.ts).
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

/**
 * Real Knative Eventing on the run's node, from its images (engines/build.sh knative's binaries
 * made into images by local/images/knative.ts, imported into the node, config/ installed with
 * each `ko://` reference resolved by digest: local/knative/real-node.ts), for the suites under
 * test/integration/knative/. BPA_TEST_KNATIVE=0 leaves it out (those suites then skip, saying
 * why); any other failure fails the run.
 */
async function installKnative(
  kubeconfigPath: string,
  node: { importImage(tarPath: string): Promise<string> },
): Promise<void> {
  const { testEnv } = await import('./control-plane-env.js');
  if (process.env[testEnv.knative] === '0') {
    process.env[testEnv.noKnative] = `${testEnv.knative}=0`;
    delete process.env[testEnv.knative];
    return;
  }
  const { KubeConfig } = await import('@kubernetes/client-node');
  const { installKnativeOnRealNode } = await import('../../local/knative/real-node.js');
  const say = (line: string) => process.stderr.write(`[knative] ${line}\n`);
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(kubeconfigPath);
  const installed = await installKnativeOnRealNode({ kubeConfig, node, log: say });
  process.env[testEnv.knative] = installed.version;
  process.env[testEnv.knativeImages] = JSON.stringify(installed.images);
  say(
    `Eventing ${installed.version} ready after ${installed.readyAfterMs} ms (${installed.workloads.length} workloads, from images)`,
  );
}

export default async function globalSetup(): Promise<void> {
  resolveTsFromJsSpecifiers();
  const { projectCrds, repoRoot, startControlPlane } = await import('../../local/control-plane/index.js');
  const { jobImagesEnv, startRealNodeCluster } = await import('../../local/stack/real-cluster.js');
  const { buildTestImages } = await import('../../local/images/test-images.js');
  const { nodeUnavailableReason } = await import('../../local/stack/cluster.js');
  const { describeError } = await import('../../shared/errors.js');
  const { keepCluster, testEnv } = await import('./control-plane-env.js');
  const root = repoRoot();
  for (const [variable, folder] of Object.entries(sharedCrdFolders)) {
    const candidate = resolve(root, '..', 'shared', folder);
    if (!process.env[variable] && existsSync(candidate)) process.env[variable] = candidate;
  }
  const crds = projectCrds(process.env, root);
  // Progress only when asked: a stuck start then shows where it is.
  const log = process.env.BPA_TEST_CONTROL_PLANE_VERBOSE
    ? (line: string) => process.stderr.write(`[control-plane] ${line}\n`)
    : undefined;
  const started = Date.now();
  let controlPlane: Awaited<ReturnType<typeof startControlPlane>>;
  try {
    const quiet = log ?? (() => undefined);
    // Not root: startRealNodeCluster says so before building anything.
    const testImages = process.getuid?.() === 0 ? buildTestImages({ log: quiet }) : [];
    const cluster = await startRealNodeCluster({
      crds: crds.inputs,
      extraImages: testImages.map((image) => image.archive),
      log: quiet,
    });
    keepCluster(cluster);
    controlPlane = cluster.controlPlane;
    const { node, images } = cluster;
    process.env[testEnv.node] = node.name;
    process.env[testEnv.nodeHostPaths] = node.hostRoot;
    process.env[testEnv.nodeLab] = JSON.stringify(node.lab);
    // The images the functions' Jobs name (install, kubeconfig publisher, cleanup, KUD's default):
    // the node's own, by digest (test/support/node.ts nodeImageEnv), as `bpa dev` gives them.
    process.env[testEnv.nodeImages] = JSON.stringify(jobImagesEnv(images.references));
    const { readyMs } = node.timings;
    process.stderr.write(
      `\n[cluster] real node ${node.name} (${node.addresses.nodeIp}, pods ${node.addresses.podCidr}) Ready ` +
        `${readyMs} ms after its start; images found or built in ${images.buildMs} ms; ` +
        `${testImages.length} test images; setup ${Date.now() - started} ms\n`,
    );
    await installKnative(cluster.controlPlane.kubeconfigPath, node);
  } catch (error) {
    const { reason, message } = describeError(error);
    // Only a machine that cannot run the node falls back; any other failure is a failure.
    if (reason !== nodeUnavailableReason) throw error;
    process.env[testEnv.noNode] = message;
    process.env[testEnv.noKnative] = `no node (${message})`;
    process.stderr.write(
      `\n[cluster] no node (${message}): the control plane alone, suites that need the node skip\n`,
    );
    controlPlane = await startControlPlane({ crds: crds.inputs, ...(log ? { log } : {}) });
    keepCluster(controlPlane);
  }
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
