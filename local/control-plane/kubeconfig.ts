import { writeFileSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';

/** What a client needs to talk to the control plane as its admin. */
export interface AdminAccess {
  /** https://127.0.0.1:<port> */
  server: string;
  /** PEM of the serving certificate chain kube-apiserver generated (trusted as the CA). */
  caPem: string;
  token: string;
}

const names = { cluster: 'bpa-control-plane', user: 'bpa-admin', context: 'bpa-control-plane' };

/** The kubeconfig document, as kubectl reads it. */
export function kubeconfigDocument(access: AdminAccess, namespace?: string) {
  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: names.cluster,
        cluster: {
          server: access.server,
          'certificate-authority-data': Buffer.from(access.caPem).toString('base64'),
        },
      },
    ],
    users: [{ name: names.user, user: { token: access.token } }],
    contexts: [
      {
        name: names.context,
        context: { cluster: names.cluster, user: names.user, ...(namespace ? { namespace } : {}) },
      },
    ],
    'current-context': names.context,
    preferences: {},
  };
}

/** A client KubeConfig for the admin, built without touching the file system. */
export function adminKubeConfig(access: AdminAccess): KubeConfig {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [
      {
        name: names.cluster,
        server: access.server,
        caData: Buffer.from(access.caPem).toString('base64'),
        skipTLSVerify: false,
      },
    ],
    users: [{ name: names.user, token: access.token }],
    contexts: [{ name: names.context, cluster: names.cluster, user: names.user }],
    currentContext: names.context,
  });
  return kubeConfig;
}

/** Writes a kubeconfig file readable only by its owner (it holds the admin token). */
export function writeKubeconfigFile(path: string, access: AdminAccess): void {
  writeFileSync(path, stringify(kubeconfigDocument(access)), { mode: 0o600 });
}
