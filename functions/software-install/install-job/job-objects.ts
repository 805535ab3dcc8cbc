import { createHash } from 'node:crypto';
import type {
  V1Job,
  V1OwnerReference,
  V1Role,
  V1RoleBinding,
  V1ServiceAccount,
} from '@kubernetes/client-node';
import { managedByLabel, managedByValue } from '../../../shared/core/names.js';
import { provisioningApiVersion } from '../../../shared/schemas/provisioning.js';
import { softwareKind } from '../../../shared/schemas/software.js';

/**
 * The objects of one install run (contract section 11), all owned by the Software (garbage
 * collected with it), all pure builders. RBAC lets software-install create the Role only with
 * rules it holds itself (no `escalate`): manifests/rbac/software-install.yaml holds every rule
 * below (test/unit/manifests/rbac-table.ts, `delegated`).
 * - a ServiceAccount per Software, bound to a Role that lets it write the status of that one
 *   Software (RBAC resourceNames) and read what the install needs: the Software itself, its
 *   siblings (their pinned host keys), the cluster's ConfigMaps, the one SSH key Secret; plus host
 *   Leases and Events;
 * - a Job per Software generation (and per re-run of it: retry annotation, new nodes), whose pod
 *   runs install-job/main.ts from the functions' own image.
 */

export const softwareLabel = 'bpa.akraino.org/software';
export const softwareGenerationLabel = 'bpa.akraino.org/software-generation';
export const componentLabel = 'app.kubernetes.io/component';
export const installJobComponent = 'software-install-job';
/** The functions' image's USER (local/images/recipes.ts): a numeric non-root uid for Pod Security `restricted`. */
export const installJobUid = 65532;

export interface SoftwareOwner {
  namespace: string;
  name: string;
  uid: string;
  generation: number;
}

export interface InstallJobInput {
  software: SoftwareOwner;
  /** Why this run exists beyond the generation: '' for the first, else a short id (retry value, new nodes). */
  run: string;
  image: string;
  /** The image's command for the install entry point; args name the Software and its generation. */
  command: readonly string[];
  /** software-install's own settings, passed on (SSH_USER, SSH_PORT, INSTALL_ATTEMPTS, ...). */
  env: Readonly<Record<string, string>>;
  activeDeadlineSeconds: number;
}

const shortHash = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 8);

/** A name of at most `max` characters: cut, with a hash of the whole so that cut names stay distinct. */
function boundedName(name: string, max: number): string {
  if (name.length <= max) return name;
  return `${name.slice(0, max - 9).replace(/-+$/, '')}-${shortHash(name)}`;
}

/** `<software>-install-<generation>[-<run>]`, at most 63 characters (the Job's pods carry it as a label). */
export const installJobName = (software: string, generation: number, run = '') =>
  boundedName(`${software}-install-${generation}${run ? `-${run}` : ''}`, 63);

export const installerServiceAccountName = (software: string) => boundedName(`${software}-installer`, 253);

export function softwareOwnerReference(software: SoftwareOwner): V1OwnerReference {
  return {
    apiVersion: provisioningApiVersion,
    kind: softwareKind,
    name: software.name,
    uid: software.uid,
    controller: true,
  };
}

const metadata = (software: SoftwareOwner, name: string, extraLabels: Record<string, string> = {}) => ({
  name,
  namespace: software.namespace,
  labels: {
    [managedByLabel]: managedByValue,
    [componentLabel]: installJobComponent,
    [softwareLabel]: boundedName(software.name, 63),
    ...extraLabels,
  },
  ownerReferences: [softwareOwnerReference(software)],
});

export function installerServiceAccount(software: SoftwareOwner): V1ServiceAccount {
  return {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: metadata(software, installerServiceAccountName(software.name)),
    automountServiceAccountToken: true,
  };
}

export function installerRole(software: SoftwareOwner, sshKeySecret: string): V1Role {
  const group = provisioningApiVersion.split('/')[0] as string;
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: metadata(software, installerServiceAccountName(software.name)),
    rules: [
      // Its own Software: read it, write its status. Nothing else of any Software is writable.
      { apiGroups: [group], resources: ['softwares'], verbs: ['get'], resourceNames: [software.name] },
      // By server-side apply as bpa-software-install-job (shared/k8s/status-apply.ts; a JSON
      // patch drops the function's claim): patch only.
      {
        apiGroups: [group],
        resources: ['softwares/status'],
        verbs: ['patch'],
        resourceNames: [software.name],
      },
      // Host keys pinned by the cluster's other Softwares (read-only).
      { apiGroups: [group], resources: ['softwares'], verbs: ['list'] },
      // The cluster's node ConfigMap is found by label.
      { apiGroups: [''], resources: ['configmaps'], verbs: ['list'] },
      { apiGroups: [''], resources: ['secrets'], verbs: ['get'], resourceNames: [sshKeySecret] },
      // One apt at a time per host: the host Leases bpa-apt-<ip> of this namespace (host-lease.ts;
      // a Role, so never a Lease of another namespace; create cannot be limited by name).
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
      // shared/k8s/events.ts: create, then a patch of count/lastTimestamp for a repeat.
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
    ],
  };
}

export function installerRoleBinding(software: SoftwareOwner): V1RoleBinding {
  const name = installerServiceAccountName(software.name);
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: metadata(software, name),
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [{ kind: 'ServiceAccount', name, namespace: software.namespace }],
  };
}

export function installJob(input: InstallJobInput): V1Job {
  const { software } = input;
  const name = installJobName(software.name, software.generation, input.run);
  const labels = { [softwareGenerationLabel]: String(software.generation) };
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: metadata(software, name, labels),
    spec: {
      // The installer retries hosts itself; a new pod only when it could not record its outcome.
      backoffLimit: 2,
      activeDeadlineSeconds: input.activeDeadlineSeconds,
      ttlSecondsAfterFinished: 86400,
      template: {
        metadata: { labels: { ...metadata(software, name, labels).labels } },
        spec: {
          serviceAccountName: installerServiceAccountName(software.name),
          restartPolicy: 'Never',
          // Pod Security `restricted` (contract section 12): a tenant namespace may enforce it.
          // 65532 is the image's own USER (local/images/recipes.ts), numeric so that the kubelet can check
          // runAsNonRoot without reading the image.
          securityContext: {
            runAsNonRoot: true,
            runAsUser: installJobUid,
            runAsGroup: installJobUid,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          // The root file system is read-only; node and ssh2 write nothing but temporary files.
          volumes: [{ name: 'tmp', emptyDir: { sizeLimit: '64Mi' } }],
          containers: [
            {
              name: 'install',
              image: input.image,
              command: [...input.command],
              args: [
                '--namespace',
                software.namespace,
                '--name',
                software.name,
                '--generation',
                String(software.generation),
              ],
              env: Object.entries(input.env)
                .sort(([a], [b]) => a.localeCompare(b))
                .map(([envName, value]) => ({ name: envName, value })),
              securityContext: {
                allowPrivilegeEscalation: false,
                runAsNonRoot: true,
                runAsUser: installJobUid,
                runAsGroup: installJobUid,
                readOnlyRootFilesystem: true,
                capabilities: { drop: ['ALL'] },
                seccompProfile: { type: 'RuntimeDefault' },
              },
              volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
            },
          ],
        },
      },
    },
  };
}
