import type { V1Job, V1Secret } from '@kubernetes/client-node';
import { kudMultiClusterPath, placementSpec, type Placement } from './kud-job.js';
import {
  cleanupJobName,
  kubeconfigArtifactsMountPath,
  kubeconfigPublisherName,
  kubeconfigSecretKey,
  kubeconfigSecretName,
} from './lifecycle-names.js';
import { clusterLabel, managedByLabel, managedByValue } from './names.js';
import { provisioningOwnerReference, type ProvisioningOwner } from './owner.js';
import { functionsObjectMeta } from './ownership.js';

const managedLabels = (cluster: string) => ({ [clusterLabel]: cluster, [managedByLabel]: managedByValue });

/**
 * `<cluster>-admin-kubeconfig` (key `value`) in the Provisioning's namespace, owned by it
 * (contract section 10), written by kud-job-launch with what the publisher printed.
 */
export function buildKubeconfigSecret(
  owner: ProvisioningOwner,
  cluster: string,
  adminConf: string,
): V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: kubeconfigSecretName(cluster),
      namespace: owner.namespace,
      labels: managedLabels(cluster),
      ownerReferences: [provisioningOwnerReference(owner)],
    },
    type: 'cluster.x-k8s.io/secret',
    stringData: { [kubeconfigSecretKey]: adminConf },
  };
}

/** The publisher's program in the functions' image (scripts/bundle.mjs builds it). */
export const kubeconfigPublisherEntryPoint = 'dist/bundle/kubeconfig-publisher.mjs';
/** Generation of the Provisioning whose KUD Job the publisher copies admin.conf of. */
export const publisherGenerationAnnotation = 'bpa.akraino.org/provisioning-generation';

/**
 * The publisher of the new cluster's kubeconfig (docs/adr/0009-kubeconfig-publisher.md): KUD
 * writes admin.conf on the node its Job ran on, where no function can read it, so a short Job in
 * the functions' namespace, pinned to that node (`nodeName`, not scheduled), mounts only that
 * cluster's artifacts directory, read-only, and prints the file as one framed line to its log.
 * It holds no API token at all (none is mounted): kud-job-launch reads the completed pod's log
 * (pods/log in the functions' namespace) and writes the Secret in the Provisioning's namespace.
 * No host network, no privileges.
 */
export function buildKubeconfigPublisher(
  owner: ProvisioningOwner,
  cluster: string,
  options: {
    image: string;
    nodeName: string;
    generation: number;
    functionsNamespace: string;
    activeDeadlineSeconds?: number;
    /** KUD_TOLERATIONS: the KUD pod's node may be tainted (its nodeSelector is not repeated). */
    placement?: Placement;
  },
): V1Job {
  const metadata = functionsObjectMeta(
    owner,
    cluster,
    options.functionsNamespace,
    kubeconfigPublisherName(cluster),
  );
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      ...metadata,
      annotations: { ...metadata.annotations, [publisherGenerationAnnotation]: String(options.generation) },
    },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: options.activeDeadlineSeconds ?? defaultPublisherDeadlineSeconds,
      template: {
        metadata: { labels: { [clusterLabel]: cluster } },
        spec: {
          // Where KUD ran: its hostPath directory is on that node only.
          nodeName: options.nodeName,
          ...placementSpec(options.placement, true),
          automountServiceAccountToken: false,
          restartPolicy: 'Never',
          containers: [
            {
              name: 'publish',
              image: options.image,
              imagePullPolicy: 'IfNotPresent',
              command: ['node', kubeconfigPublisherEntryPoint],
              args: ['--file', `${kubeconfigArtifactsMountPath}/admin.conf`],
              volumeMounts: [{ name: 'artifacts', mountPath: kubeconfigArtifactsMountPath, readOnly: true }],
              // Root without capabilities: KUD's admin.conf is root's, mode 0600 (the owner may
              // read it without CAP_DAC_OVERRIDE); nothing else is needed or allowed.
              securityContext: {
                runAsUser: 0,
                runAsNonRoot: false,
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                capabilities: { drop: ['ALL'] },
                seccompProfile: { type: 'RuntimeDefault' },
              },
            },
          ],
          volumes: [
            {
              name: 'artifacts',
              // No type check: a missing directory is made (empty) inside the cluster's own
              // directory, which the deletion cleanup removes, and the publisher reports
              // "no admin.conf" in its own words instead of a pod that cannot start.
              hostPath: { path: `${kudMultiClusterPath}/${cluster}/artifacts` },
            },
          ],
        },
      },
    },
  };
}

export const defaultPublisherDeadlineSeconds = 120;

export const defaultCleanupDeadlineSeconds = 300;

/**
 * The short Job that removes KUD's directory of the cluster from the node when a Provisioning is
 * deleted (it holds a cluster-admin kubeconfig), in the functions' namespace, pinned to the node
 * the KUD pod ran on (found by the KUD Job's controller uid, recorded in status.job.nodeName);
 * host network and the same hostPath as the KUD Job, so it lands where KUD wrote; only that one directory is removed (the name is a validated
 * DNS-1123 label, so the path cannot escape).
 */
export function buildCleanupJob(
  owner: ProvisioningOwner,
  cluster: string,
  options: {
    image: string;
    functionsNamespace: string;
    /** The node the KUD pod ran on (status.job.nodeName), where KUD wrote the directory. */
    nodeName?: string;
    activeDeadlineSeconds?: number;
    /**
     * KUD_NODE_SELECTOR and KUD_TOLERATIONS: the tolerations always, the selector only when the
     * node is unknown (then the scheduler picks one of the nodes KUD may have run on).
     */
    placement?: Placement;
  },
): V1Job {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: functionsObjectMeta(owner, cluster, options.functionsNamespace, cleanupJobName(cluster)),
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: options.activeDeadlineSeconds ?? defaultCleanupDeadlineSeconds,
      template: {
        metadata: { labels: { [clusterLabel]: cluster } },
        spec: {
          ...(options.nodeName ? { nodeName: options.nodeName } : {}),
          ...placementSpec(options.placement, options.nodeName !== undefined),
          automountServiceAccountToken: false,
          hostNetwork: true,
          restartPolicy: 'Never',
          containers: [
            {
              name: 'cleanup',
              image: options.image,
              imagePullPolicy: 'IfNotPresent',
              command: ['/bin/sh', '-c'],
              args: [`rm -rf -- ${kudMultiClusterPath}/${cluster}`],
              // Root: KUD wrote the directory as root, and the project's images run as 65532
              // unless a pod says otherwise.
              securityContext: { runAsUser: 0 },
              volumeMounts: [{ name: 'multi-cluster', mountPath: kudMultiClusterPath }],
            },
          ],
          volumes: [{ name: 'multi-cluster', hostPath: { path: kudMultiClusterPath } }],
        },
      },
    },
  };
}
