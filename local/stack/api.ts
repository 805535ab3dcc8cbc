import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { ApiextensionsV1Api, KubeConfig } from '@kubernetes/client-node';
import { BpaError, describeError } from '../../shared/errors.js';
import {
  createNamespace,
  installCrds,
  isStatus,
  loadCrds,
  projectCrds,
  startControlPlane,
  type ControlPlane,
} from '../control-plane/index.js';

/** The Kubernetes API the stack talks to: a given cluster, or a control plane it started. */
export interface StackApi {
  kubeConfig: KubeConfig;
  kubeconfigPath: string;
  /** The API server URL (the ApiServerSource's `source` attribute). */
  server: string;
  /** True when the stack started its own control plane (and stops it). */
  embedded: boolean;
  stop(): Promise<void>;
}

export interface ConnectOptions {
  /** A kubeconfig file; absent = start an embedded control plane. */
  kubeconfig?: string;
  /** Where the embedded control plane's kubeconfig is written. */
  kubeconfigOut?: string;
  log: (line: string) => void;
}

/** Connects to the given cluster, or starts etcd + kube-apiserver with every CRD the project uses. */
export async function connectApi(options: ConnectOptions): Promise<StackApi> {
  if (options.kubeconfig) {
    const path = resolve(options.kubeconfig);
    if (!existsSync(path))
      throw new BpaError('KubeconfigMissing', `kubeconfig ${path} does not exist`, 'invalid');
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(path);
    const server = kubeConfig.getCurrentCluster()?.server;
    if (!server)
      throw new BpaError('KubeconfigInvalid', `kubeconfig ${path} has no current cluster`, 'invalid');
    await ensureCrds(kubeConfig, options.log);
    return { kubeConfig, kubeconfigPath: path, server, embedded: false, stop: async () => undefined };
  }
  const crds = projectCrds();
  options.log('starting the control plane (etcd + kube-apiserver)…');
  const controlPlane: ControlPlane = await startControlPlane({
    crds: crds.inputs,
    handleSignals: false,
    ...(options.kubeconfigOut ? { kubeconfigPath: resolve(options.kubeconfigOut) } : {}),
  });
  return {
    kubeConfig: controlPlane.kubeConfig,
    kubeconfigPath: controlPlane.kubeconfigPath,
    server: controlPlane.server,
    embedded: true,
    stop: () => controlPlane.stop(),
  };
}

/**
 * Installs the project's CRDs (and the minimal BareMetalHost one) that the cluster lacks.
 * CRDs already there are left alone: a cluster's real Metal3 CRD is never replaced.
 */
export async function ensureCrds(kubeConfig: KubeConfig, log: (line: string) => void): Promise<void> {
  const extensions = kubeConfig.makeApiClient(ApiextensionsV1Api);
  const missing = [];
  for (const crd of loadCrds(projectCrds().inputs)) {
    try {
      await extensions.readCustomResourceDefinition({ name: crd.metadata.name });
    } catch (error) {
      if (!isStatus(error, 404)) {
        throw new BpaError(
          'ApiUnreachable',
          `cannot read CRD ${crd.metadata.name} from the cluster: ${describeError(error).message}`,
          'transient',
        );
      }
      missing.push(crd);
    }
  }
  if (missing.length === 0) return;
  log(`installing missing CRDs: ${missing.map((crd) => crd.metadata.name).join(', ')}`);
  try {
    await installCrds(kubeConfig, missing);
  } catch (error) {
    throw new BpaError(
      'CrdInstallFailed',
      `the cluster lacks ${missing.map((crd) => crd.metadata.name).join(', ')} and installing them failed ` +
        `(${describeError(error).message}); install them with kubectl apply -k manifests/crds`,
      'invalid',
    );
  }
}

/** Creates the namespace the manifests install into (existing is fine). */
export async function ensureNamespace(kubeConfig: KubeConfig, name: string): Promise<void> {
  await createNamespace(kubeConfig, name, { 'app.kubernetes.io/part-of': 'bpa-functions' });
}
