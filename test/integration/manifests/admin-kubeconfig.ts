import { KubeConfig } from '@kubernetes/client-node';

/** The admin KubeConfig of a kubeconfig file (the test control plane's). */
export function loadAdminKubeConfig(path: string): KubeConfig {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(path);
  return kubeConfig;
}
