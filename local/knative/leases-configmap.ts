import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { isStatus } from '../control-plane/apply.js';

/**
 * A lease file of this machine as the ConfigMap host-lookup reads with
 * `LEASES_SOURCE=configmap:<namespace>/<name>/<key>` (what manifests/leases-publisher's sidecar
 * does next to Ironic): a pod of the real node has its own root and reads no file of the
 * machine. Written now and again whenever the file changes (polled each second); the returned
 * function stops following it. `namespace` must be onboarded (host-lookup reads ConfigMaps there).
 */
export async function followLeasesFile(
  kubeConfig: KubeConfig,
  file: string,
  target: { namespace: string; name: string; key: string },
  log: (line: string) => void = () => undefined,
): Promise<{ leasesSource: string; stop: () => void }> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const body = () => ({
    metadata: { name: target.name, namespace: target.namespace },
    data: { [target.key]: readFileSync(file, 'utf8') },
  });
  const write = async () => {
    try {
      await core.replaceNamespacedConfigMap({ name: target.name, namespace: target.namespace, body: body() });
    } catch (error) {
      if (!isStatus(error, 404)) throw error;
      await core.createNamespacedConfigMap({ namespace: target.namespace, body: body() });
    }
  };
  await write();
  const onChange = () =>
    void write().catch((error: unknown) =>
      log(`leases: ${file} not copied to its ConfigMap: ${String(error)}`),
    );
  watchFile(file, { interval: 1000 }, onChange);
  return {
    leasesSource: `configmap:${target.namespace}/${target.name}/${target.key}`,
    stop: () => unwatchFile(file, onChange),
  };
}
