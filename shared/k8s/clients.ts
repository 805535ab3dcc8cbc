import { BatchV1Api, CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';

/** The API groups the functions use, all from one KubeConfig. */
export interface KubeClients {
  kubeConfig: KubeConfig;
  core: CoreV1Api;
  batch: BatchV1Api;
  custom: CustomObjectsApi;
}

// One set of clients per KubeConfig: building them parses the config and creates HTTP agents.
const cache = new WeakMap<KubeConfig, KubeClients>();

export function kubeClients(kubeConfig: KubeConfig): KubeClients {
  let clients = cache.get(kubeConfig);
  if (!clients) {
    clients = {
      kubeConfig,
      core: kubeConfig.makeApiClient(CoreV1Api),
      batch: kubeConfig.makeApiClient(BatchV1Api),
      custom: kubeConfig.makeApiClient(CustomObjectsApi),
    };
    cache.set(kubeConfig, clients);
  }
  return clients;
}

/**
 * KUBECONFIG, else ~/.kube/config, else the in-cluster service account. Imported statically
 * like the API classes above: one dynamic import of the package would make a bundle keep every
 * API group it exports (scripts/bundle.mjs).
 */
export function loadDefaultKubeConfig(): KubeConfig {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromDefault();
  return kubeConfig;
}
