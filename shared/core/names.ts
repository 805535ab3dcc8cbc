/** Names, labels and annotations of the objects the product derives from a Provisioning. */
export const clusterLabel = 'cluster';
export const managedByLabel = 'app.kubernetes.io/managed-by';
export const managedByValue = 'bpa-functions';
/** sha256 hex of the hosts.ini text the Job was launched with. */
export const inventorySha256Annotation = 'bpa.akraino.org/inventory-sha256';
/** Key of the inventory ConfigMap holding the hosts.ini text. */
export const inventoryKey = 'hosts.ini';

export const inventoryConfigMapName = (cluster: string) => `${cluster}-inventory`;
export const kudJobName = (cluster: string) => `kud-${cluster}`;
export const clusterConfigMapName = (cluster: string) => `${cluster}-configmap`;
