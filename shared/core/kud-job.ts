import type { V1ConfigMap, V1Job, V1PodSpec } from '@kubernetes/client-node';
import type { NodeSelector, Toleration } from '../schemas/placement.js';
import { defaultFunctionsNamespace } from '../functions-namespace.js';
import {
  clusterLabel,
  inventoryConfigMapName,
  inventoryKey,
  inventorySha256Annotation,
  kudJobName,
} from './names.js';
import type { ProvisioningOwner } from './owner.js';
import { functionsObjectMeta } from './ownership.js';

/**
 * The project's KUD installer STAND-IN (local/kud-stand-in, built by `npm run images`): it checks
 * the inventory with Ansible and reaches every host, and installs nothing. A real install sets
 * KUD's own installer image (KUD_IMAGE).
 */
export const defaultKudImage = 'ghcr.io/bpa-functions/kud-stand-in:0.1.0';
export const defaultActiveDeadlineSeconds = 7200;
export const defaultSshKeySecret = 'ssh-key-secret';
/** KUD reads and writes its per-cluster artifacts here, on the node. */
export const kudMultiClusterPath = '/opt/kud/multi-cluster';
/** Where the inventory ConfigMap is mounted before it is copied into the multi-cluster dir. */
export const inventoryMountPath = '/etc/kud-inventory';
export const sshKeyMountPath = '/.ssh';

export interface KudJobOptions {
  /**
   * Where the Job and what it mounts live: the functions' own namespace (FUNCTIONS_NAMESPACE,
   * `bpa-system` as shipped), never the Provisioning's (contract section 12, ADR 0013).
   */
  functionsNamespace?: string;
  image?: string;
  activeDeadlineSeconds?: number;
  sshKeySecret?: string;
  /**
   * The installer settings, as read by the launcher from `kud-installer` in the functions' own
   * namespace (contract section 5). Given: they are written into the container's `env` (sorted
   * by name) and no ConfigMap is referenced, so nothing in the Provisioning's namespace, where a
   * tenant may write ConfigMaps, can change the env of this privileged pod; the pod template of
   * a Job is immutable. Absent: `envFrom` the optional `kud-installer` (what `bpa render` shows).
   */
  installerEnv?: Readonly<Record<string, string>>;
  /** Where the pod may run (KUD_NODE_SELECTOR, KUD_TOLERATIONS): the node that reaches the hosts. */
  placement?: Placement;
}

/** The KUD pod's placement (contract section 13); empty parts are left out of the pod spec. */
export interface Placement {
  nodeSelector?: Readonly<NodeSelector>;
  tolerations?: readonly Toleration[];
}

/**
 * The pod spec fields of a placement: `nodeSelector` (unless `pinned`: a pod given a nodeName
 * skips the scheduler, and the kubelet would refuse it if the node's labels changed since) and
 * `tolerations` (a NoExecute taint evicts even a pinned pod without them).
 */
export function placementSpec(placement: Placement | undefined, pinned = false): Partial<V1PodSpec> {
  const spec: Partial<V1PodSpec> = {};
  const selector = placement?.nodeSelector ?? {};
  if (!pinned && Object.keys(selector).length > 0) spec.nodeSelector = { ...selector };
  if (placement?.tolerations && placement.tolerations.length > 0)
    spec.tolerations = placement.tolerations.map((toleration) => ({ ...toleration }));
  return spec;
}

export interface KudJobInput {
  owner: ProvisioningOwner;
  cluster: string;
  inventorySha256: string;
  /** `spec.PodSubnet`: ` --network <subnet>` when set. */
  podSubnet?: string | null;
  /** `spec.KUDPlugins`: ` --plugins <p1> <p2> ...` when non-empty. */
  kudPlugins?: readonly string[] | null;
  /** Grow or shrink a Ready cluster (contract section 14); absent: the full install. */
  path?: KudNodePath;
}

/**
 * The installer's day-2 paths (shared/core/node-change.ts): ` --scale <n1>,<n2>` (Kubespray
 * `scale.yml --limit <nodes>`) or ` --remove-node <n1>,<n2>` (`remove-node.yml -e node=<nodes>`).
 * The node names are validated labels (schemas), Kubespray's host names.
 */
export interface KudNodePath {
  kind: 'scale' | 'remove-node';
  nodes: readonly string[];
}

/**
 * The shell line the `kud` container runs: put the inventory where KUD expects it, install
 * the SSH key as the original operator did, then run the installer. The cluster name, subnet
 * and plugin names are validated words (schemas), so they are safe on this line.
 */
export function kudInstallerScript(
  cluster: string,
  podSubnet?: string | null,
  kudPlugins?: readonly string[] | null,
  path?: KudNodePath,
) {
  const clusterDir = `${kudMultiClusterPath}/${cluster}`;
  let installer = `./installer --cluster ${cluster}`;
  if (podSubnet) installer += ` --network ${podSubnet}`;
  // Before --plugins, which takes every word after it.
  if (path) installer += ` --${path.kind} ${path.nodes.join(',')}`;
  if (kudPlugins && kudPlugins.length > 0) installer += ` --plugins ${kudPlugins.join(' ')}`;
  return [
    'set -e',
    `mkdir -p ${clusterDir}`,
    `cp ${inventoryMountPath}/${inventoryKey} ${clusterDir}/${inventoryKey}`,
    'cp -r /.ssh /root/',
    'chmod -R 600 /root/.ssh',
    installer,
  ].join('; ');
}

function installerEnvOf(settings: Readonly<Record<string, string>> | undefined) {
  if (!settings) return { envFrom: [{ configMapRef: { name: 'kud-installer', optional: true } }] };
  const names = Object.keys(settings).sort();
  return { env: names.map((name) => ({ name, value: settings[name] ?? '' })) };
}

/**
 * The inventory the KUD Job mounts: `<cluster>-inventory` in the functions' namespace, written
 * by kud-job-launch at launch from the Provisioning's status.nodes (rendered again, never copied
 * from the tenant's ConfigMap of the same name, which the tenant can edit).
 */
export function buildMountedInventoryConfigMap(
  owner: ProvisioningOwner,
  cluster: string,
  hostsIni: string,
  inventorySha256: string,
  functionsNamespace: string = defaultFunctionsNamespace,
): V1ConfigMap {
  const metadata = functionsObjectMeta(owner, cluster, functionsNamespace, inventoryConfigMapName(cluster));
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      ...metadata,
      annotations: { ...metadata.annotations, [inventorySha256Annotation]: inventorySha256 },
    },
    data: { [inventoryKey]: hostsIni },
  };
}

/**
 * The Job `kud-<cluster>` that installs KUD on the cluster's nodes (contract sections 5 and 12):
 * in the functions' namespace, tied to its Provisioning by the uid label and the annotations
 * (an owner reference cannot cross namespaces), mounting that namespace's inventory and the
 * operator's SSH key Secret. It needs no API token: none is mounted.
 */
export function buildKudJob(input: KudJobInput, options: KudJobOptions = {}): V1Job {
  const { owner, cluster } = input;
  const namespace = options.functionsNamespace ?? defaultFunctionsNamespace;
  const metadata = functionsObjectMeta(owner, cluster, namespace, kudJobName(cluster));
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      ...metadata,
      annotations: { ...metadata.annotations, [inventorySha256Annotation]: input.inventorySha256 },
    },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: options.activeDeadlineSeconds ?? defaultActiveDeadlineSeconds,
      template: {
        metadata: { labels: { [clusterLabel]: cluster } },
        spec: {
          ...placementSpec(options.placement),
          automountServiceAccountToken: false,
          hostNetwork: true,
          restartPolicy: 'Never',
          containers: [
            {
              name: 'kud',
              image: options.image ?? defaultKudImage,
              imagePullPolicy: 'IfNotPresent',
              // Root, as KUD's own image runs: the project's images run as 65532 unless told
              // otherwise, and the command copies the key into /root and writes the hostPath.
              securityContext: { privileged: true, runAsUser: 0 },
              command: ['/bin/sh', '-c'],
              args: [kudInstallerScript(cluster, input.podSubnet, input.kudPlugins, input.path)],
              ...installerEnvOf(options.installerEnv),
              volumeMounts: [
                { name: 'multi-cluster', mountPath: kudMultiClusterPath },
                { name: 'ssh-key', mountPath: sshKeyMountPath, readOnly: true },
                { name: 'inventory', mountPath: inventoryMountPath, readOnly: true },
              ],
            },
          ],
          volumes: [
            { name: 'multi-cluster', hostPath: { path: kudMultiClusterPath } },
            {
              name: 'ssh-key',
              secret: {
                secretName: options.sshKeySecret ?? defaultSshKeySecret,
                items: [
                  { key: 'id_rsa', path: 'id_rsa' },
                  { key: 'id_rsa.pub', path: 'id_rsa.pub' },
                ],
              },
            },
            { name: 'inventory', configMap: { name: inventoryConfigMapName(cluster) } },
          ],
        },
      },
    },
  };
}
