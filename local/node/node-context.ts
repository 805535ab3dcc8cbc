import type { CoreV1Api } from '@kubernetes/client-node';
import type { ImageMap } from './image-map.js';
import type { NodeNetwork } from './network.js';

/** What every pod worker of a node shares. */
export interface NodeContext {
  core: CoreV1Api;
  nodeName: string;
  /** The node's InternalIP (status.hostIP of its pods). */
  hostIP: string;
  network: NodeNetwork;
  imageMap: ImageMap;
  /** Parent of each pod's own directory (volumes, logs, launcher scripts). */
  podsDir: string;
  /** On tmpfs: each container run's overlay layers (an upper layer cannot live on the root file system). */
  runsDir: string;
  /** Where hostPath volumes are rooted. */
  hostPathRoot: string;
  nodeCapacity: { cpu: string; memory: string };
  /** KUBERNETES_SERVICE_* and the Service links of a namespace. */
  serviceEnv(namespace: string, serviceLinks: boolean): Record<string, string>;
  log(message: string, fields?: Record<string, unknown>): void;
}

/** Kubernetes' metav1.Time: RFC 3339 in seconds. */
export const kubeTime = (date = new Date()) => date.toISOString().replace(/\.\d+Z$/, 'Z');
