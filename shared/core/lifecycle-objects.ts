import type { V1Job, V1Role, V1RoleBinding, V1Secret, V1ServiceAccount } from '@kubernetes/client-node';
import { kudMultiClusterPath } from './kud-job.js';
import {
  cleanupJobName,
  kubeconfigArtifactsMountPath,
  kubeconfigPublisherName,
  kubeconfigSecretKey,
  kubeconfigSecretName,
} from './lifecycle-names.js';
import { clusterLabel, managedByLabel, managedByValue } from './names.js';
import { provisioningOwnerReference, type ProvisioningOwner } from './owner.js';

const managedLabels = (cluster: string) => ({ [clusterLabel]: cluster, [managedByLabel]: managedByValue });

/**
 * `<cluster>-admin-kubeconfig` (key `value`), owned by the Provisioning (contract section 10).
 * Without `adminConf`: the empty Secret kud-job-launch creates, which the publisher Job fills in
 * (its Role may update that Secret but create none).
 */
export function buildKubeconfigSecret(
  owner: ProvisioningOwner,
  cluster: string,
  adminConf?: string,
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
    ...(adminConf === undefined ? {} : { stringData: { [kubeconfigSecretKey]: adminConf } }),
  };
}

/** The publisher's program in the functions' image (scripts/bundle.mjs builds it). */
export const kubeconfigPublisherEntryPoint = 'dist/bundle/kubeconfig-publisher.mjs';
/** Generation of the Provisioning whose KUD Job the publisher copies admin.conf of. */
export const publisherGenerationAnnotation = 'bpa.akraino.org/provisioning-generation';

export interface KubeconfigPublisher {
  secret: V1Secret;
  serviceAccount: V1ServiceAccount;
  role: V1Role;
  roleBinding: V1RoleBinding;
  job: V1Job;
}

/**
 * The publication path of the new cluster's kubeconfig (docs/adr/0009-kubeconfig-publisher.md):
 * KUD writes admin.conf on the node its Job ran on, where no function can read it, so a short Job
 * pinned to that node (`nodeName`, not scheduled) mounts only that cluster's artifacts directory,
 * read-only, and copies the file into the empty Secret. Its ServiceAccount's Role names that one
 * Secret (get, update): a leaked token of it can write nothing else. No host network, no
 * privileges; the file's content goes to the API only, never to a log.
 */
export function buildKubeconfigPublisher(
  owner: ProvisioningOwner,
  cluster: string,
  options: { image: string; nodeName: string; generation: number; activeDeadlineSeconds?: number },
): KubeconfigPublisher {
  const name = kubeconfigPublisherName(cluster);
  const secretName = kubeconfigSecretName(cluster);
  const metadata = () => ({
    name,
    namespace: owner.namespace,
    labels: managedLabels(cluster),
    ownerReferences: [provisioningOwnerReference(owner)],
  });
  return {
    secret: buildKubeconfigSecret(owner, cluster),
    serviceAccount: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: metadata() },
    role: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: metadata(),
      rules: [
        { apiGroups: [''], resources: ['secrets'], resourceNames: [secretName], verbs: ['get', 'update'] },
      ],
    },
    roleBinding: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: metadata(),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace: owner.namespace }],
    },
    job: {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: {
        ...metadata(),
        annotations: { [publisherGenerationAnnotation]: String(options.generation) },
      },
      spec: {
        backoffLimit: 0,
        activeDeadlineSeconds: options.activeDeadlineSeconds ?? defaultPublisherDeadlineSeconds,
        template: {
          metadata: { labels: { [clusterLabel]: cluster } },
          spec: {
            // Where KUD ran: its hostPath directory is on that node only.
            nodeName: options.nodeName,
            serviceAccountName: name,
            restartPolicy: 'Never',
            containers: [
              {
                name: 'publish',
                image: options.image,
                imagePullPolicy: 'IfNotPresent',
                command: ['node', kubeconfigPublisherEntryPoint],
                args: ['--file', `${kubeconfigArtifactsMountPath}/admin.conf`, '--secret', secretName],
                env: [
                  { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
                ],
                volumeMounts: [
                  { name: 'artifacts', mountPath: kubeconfigArtifactsMountPath, readOnly: true },
                ],
                // Root without capabilities: KUD's admin.conf is root's, mode 0600 (the owner may
                // read it without CAP_DAC_OVERRIDE); nothing else is needed or allowed.
                securityContext: {
                  runAsUser: 0,
                  runAsNonRoot: false,
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  capabilities: { drop: ['ALL'] },
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
    },
  };
}

export const defaultPublisherDeadlineSeconds = 120;

export const defaultCleanupDeadlineSeconds = 300;

/**
 * The short Job that removes KUD's directory of the cluster from the node when a Provisioning is
 * deleted (it holds a cluster-admin kubeconfig). Host network and the same hostPath as the KUD
 * Job, so it lands where KUD wrote; only that one directory is removed (the name is a validated
 * DNS-1123 label, so the path cannot escape).
 */
export function buildCleanupJob(
  owner: ProvisioningOwner,
  cluster: string,
  options: { image: string; activeDeadlineSeconds?: number },
): V1Job {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: cleanupJobName(cluster),
      namespace: owner.namespace,
      labels: managedLabels(cluster),
      ownerReferences: [provisioningOwnerReference(owner)],
    },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: options.activeDeadlineSeconds ?? defaultCleanupDeadlineSeconds,
      template: {
        metadata: { labels: { [clusterLabel]: cluster } },
        spec: {
          hostNetwork: true,
          restartPolicy: 'Never',
          containers: [
            {
              name: 'cleanup',
              image: options.image,
              imagePullPolicy: 'IfNotPresent',
              command: ['/bin/sh', '-c'],
              args: [`rm -rf -- ${kudMultiClusterPath}/${cluster}`],
              volumeMounts: [{ name: 'multi-cluster', mountPath: kudMultiClusterPath }],
            },
          ],
          volumes: [{ name: 'multi-cluster', hostPath: { path: kudMultiClusterPath } }],
        },
      },
    },
  };
}
