import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import type { Env } from '../../shared/config.js';
import { BpaError } from '../../shared/errors.js';
import { startControlPlane, waitFor, type ControlPlane, type CrdInput } from '../control-plane/index.js';
import { buildProjectImages } from '../images/main.js';
import {
  kubeletNodeApiAddress,
  startKubeletNode,
  writeBusyboxImage,
  type KubeletNode,
} from '../kubelet-node/index.js';

/** What the real node runs from: every image `npm run images` builds, by archive and reference. */
export interface RealNodeImages {
  /** The images-local Component (manifests/components/images-local): image -> digest. */
  component: string | undefined;
  /** image name -> `localhost/bpa-functions/<image>@<digest>`. */
  references: Record<string, string>;
  /** Milliseconds spent building them, or finding them in the cache (importing is in the node's timings). */
  buildMs: number;
}

/**
 * The Jobs' images for functions that run beside the real node (the embedded stack's host
 * processes): bpa-config's KUD_IMAGE, CLEANUP_IMAGE, KUBECONFIG_PUBLISHER_IMAGE and
 * INSTALL_JOB_IMAGE as the images-local Component sets them in the manifests
 * (manifests/image-fields.yaml), i.e. by the digest the node holds. The functions' own defaults name
 * ghcr.io/bpa-functions/*, which the node does not hold and never pulls.
 */
export function jobImagesEnv(references: Record<string, string>): Env {
  const reference = (image: string) => {
    const found = references[image];
    if (!found) throw new BpaError('NodeStartFailed', `the real node holds no ${image} image`, 'internal');
    return found;
  };
  return {
    KUD_IMAGE: reference('kud-stand-in'),
    CLEANUP_IMAGE: reference('cleanup'),
    // The publisher is kud-job-launch's image (dist/bundle/kubeconfig-publisher.mjs in it).
    KUBECONFIG_PUBLISHER_IMAGE: reference('kud-job-launch'),
    // The install Job is software-install's image (dist/bundle/software-install-job.mjs in it).
    INSTALL_JOB_IMAGE: reference('software-install'),
  };
}

export interface RealNodeCluster {
  controlPlane: ControlPlane;
  node: KubeletNode;
  images: RealNodeImages;
  stop(): Promise<void>;
}

/** Why the node cannot run on this machine (startStackCluster falls back to the control plane on it). */
const unavailable = (why: string) =>
  new BpaError('NodeUnavailable', `the real node cannot run here: ${why}`, 'internal');

/**
 * The one-machine cluster on the real node (local/kubelet-node: containerd, kubelet, kube-proxy,
 * CoreDNS): the control plane with its controllers, advertising the address the node's pods reach
 * it on, and one node with every project image imported (built first by `npm run images`' own
 * code, which reuses its cache by content hash; the Knative images are left to their own users).
 * Resolves once the `default` namespace has its `default` ServiceAccount and `kube-root-ca.crt`:
 * before that the ServiceAccount admission plugin refuses a pod there (a CI flake once). Root only: otherwise it throws NodeUnavailable and starts nothing.
 */
export async function startRealNodeCluster(options: {
  crds: CrdInput[];
  kubeconfigPath?: string;
  serviceAccountJwksUri?: string;
  /** More OCI archives to import (the suites' test images, local/images/test-images.ts). */
  extraImages?: string[];
  log: (line: string) => void;
}): Promise<RealNodeCluster> {
  const { log } = options;
  if (process.getuid?.() !== 0) throw unavailable('it needs root (namespaces, cgroups, mounts)');
  const imagesStarted = Date.now();
  const built = buildProjectImages({ log });
  const buildMs = Date.now() - imagesStarted;
  const references = Object.fromEntries(
    built.images.map((i) => [i.name, `${i.reference.replace(/:[^:/]*$/, '')}@${i.digest}`]),
  );
  // The suites' test image (busybox), written fresh: it is the machine's own busybox.
  const scratch = mkdtempSync(join(tmpdir(), 'bpa-cluster-images-'));
  const busybox = writeBusyboxImage(scratch);
  let controlPlane: ControlPlane | undefined;
  let node: KubeletNode | undefined;
  try {
    controlPlane = await startControlPlane({
      crds: options.crds,
      controllers: true,
      handleSignals: false,
      advertiseAddress: kubeletNodeApiAddress,
      ...(options.kubeconfigPath ? { kubeconfigPath: options.kubeconfigPath } : {}),
      ...(options.serviceAccountJwksUri ? { serviceAccountJwksUri: options.serviceAccountJwksUri } : {}),
      log,
    });
    node = await startKubeletNode({
      controlPlane,
      nodeName: 'bpa-node',
      images: [...built.images.map((i) => i.archive), busybox.path, ...(options.extraImages ?? [])],
      log,
    });
    const core = controlPlane.kubeConfig.makeApiClient(CoreV1Api);
    await waitFor(
      async () => {
        const account = await core
          .readNamespacedServiceAccount({ name: 'default', namespace: 'default' })
          .catch(() => undefined);
        const ca = await core
          .readNamespacedConfigMap({ name: 'kube-root-ca.crt', namespace: 'default' })
          .catch(() => undefined);
        return account && ca ? true : undefined;
      },
      { what: "the default namespace's ServiceAccount and kube-root-ca.crt", timeoutMs: 60_000 },
    );
  } catch (error) {
    await node?.stop();
    await controlPlane?.stop();
    throw error;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  const started = { controlPlane, node };
  return {
    ...started,
    images: { component: built.component, references, buildMs },
    stop: async () => {
      await started.node.stop();
      await started.controlPlane.stop();
    },
  };
}
