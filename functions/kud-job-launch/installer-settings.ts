import { installerSettingsName } from '../../shared/core/lifecycle-names.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { readConfigMap } from '../../shared/k8s/config-maps.js';

/**
 * The installer settings (contract section 5): the ConfigMap `kud-installer` of the functions'
 * own namespace, never one of the Provisioning's namespace (a tenant may write ConfigMaps there,
 * and the Job is privileged on the host network). Absent: undefined (the installer's defaults).
 */
export async function readInstallerSettings(
  clients: KubeClients,
  functionsNamespace: string,
): Promise<Record<string, string> | undefined> {
  const configMap = await readConfigMap(clients, functionsNamespace, installerSettingsName);
  return configMap ? { ...configMap.data } : undefined;
}
