import type { V1ConfigMap } from '@kubernetes/client-node';
import { installerSettingsName } from '../../shared/core/lifecycle-names.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { readConfigMap } from '../../shared/k8s/config-maps.js';
import { configMapWatch, type WatchedObjects } from '../../shared/k8s/watched-objects.js';

/** The key of the server's watch of the installer settings (FunctionDefinition.watches). */
const installerSettingsKey = 'installer-settings';

/** kud-job-launch's watch of `kud-installer` in its own namespace. */
export const installerSettingsWatch = (functionsNamespace: string) =>
  configMapWatch(installerSettingsKey, functionsNamespace, installerSettingsName);

/**
 * The installer settings (contract section 5): the ConfigMap `kud-installer` of the functions'
 * own namespace, never one of the Provisioning's namespace (a tenant may write ConfigMaps there,
 * and the Job is privileged on the host network). Absent: undefined (the installer's defaults).
 * As the server's watch last sent it while that is up (issue 26 item 4: no read per launch; an
 * edit reaches the watch milliseconds after it is stored, long before the chain that follows
 * reaches a launch), else read.
 */
export async function readInstallerSettings(
  clients: KubeClients,
  functionsNamespace: string,
  watched?: WatchedObjects,
): Promise<Record<string, string> | undefined> {
  const seen = watched
    ?.of(installerSettingsKey)
    ?.latest<V1ConfigMap>(functionsNamespace, installerSettingsName);
  const configMap = seen
    ? seen.object
    : await readConfigMap(clients, functionsNamespace, installerSettingsName);
  return configMap ? { ...configMap.data } : undefined;
}
