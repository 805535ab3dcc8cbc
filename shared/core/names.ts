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

/**
 * Ties of an object in the functions' namespace to its Provisioning, which owner references
 * cannot make across namespaces (ADR 0013): the uid label (deletion and renames select by it),
 * and the Provisioning's namespace and name as annotations (a Job update finds its Provisioning).
 */
export const provisioningUidLabel = 'bpa.akraino.org/provisioning-uid';
export const provisioningNamespaceAnnotation = 'bpa.akraino.org/provisioning-namespace';
export const provisioningNameAnnotation = 'bpa.akraino.org/provisioning-name';
