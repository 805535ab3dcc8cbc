import { RbacAuthorizationV1Api, type V1Role } from '@kubernetes/client-node';
import { classifyApiError, isConflict } from '../../shared/k8s/api-errors.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { createJobOrGetExisting } from '../../shared/k8s/jobs.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import type { SoftwareInstallConfig } from './config.js';
import {
  installJob,
  installJobName,
  installerRole,
  installerRoleBinding,
  installerServiceAccount,
} from './install-job/job-objects.js';
import { softwareRef } from './software-status.js';

/** software-install's settings the install Job needs too (SSH_KNOWN_HOSTS, a file of this pod, goes as its text). */
const passedOn = [
  'SSH_USER',
  'SSH_PORT',
  'SSH_KEY_SECRET',
  'SSH_CONCURRENCY',
  'SSH_TIMEOUT_SECONDS',
  'SSH_CONNECT_TIMEOUT_SECONDS',
  'APT_LOCK_TIMEOUT_SECONDS',
  'INSTALL_ATTEMPTS',
  'INSTALL_RETRY_DELAY_SECONDS',
  'HOST_LEASE_SECONDS',
] as const;

async function createOrKeep(what: string, create: () => Promise<unknown>, replace?: () => Promise<unknown>) {
  try {
    await create();
  } catch (error) {
    if (!isConflict(error)) throw classifyApiError(error, `create ${what}`);
    await replace?.();
  }
}

/**
 * Creates the install Job of a claimed Software generation (and run), with its ServiceAccount,
 * Role and RoleBinding, all owned by the Software; idempotent (an existing Job of that name is
 * the one). Returns the Job's name. The Job writes the outcome to the Software's status.
 */
export async function launchInstallJob(
  config: SoftwareInstallConfig,
  clients: KubeClients,
  claimed: StoredObject,
  run: string,
  deadlineSeconds: number,
  /** The text of SSH_KNOWN_HOSTS, read before the claim: the Job pins exactly these keys. */
  knownHosts?: string,
): Promise<string> {
  const ref = softwareRef(claimed);
  const owner = { namespace: ref.namespace, name: ref.name, uid: ref.uid, generation: ref.generation };
  const rbac = clients.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  const namespace = ref.namespace;
  const account = installerServiceAccount(owner);
  await createOrKeep(`ServiceAccount ${namespace}/${account.metadata?.name}`, () =>
    clients.core.createNamespacedServiceAccount({ namespace, body: account }),
  );
  const role: V1Role = installerRole(owner, config.SSH_KEY_SECRET);
  const roleName = role.metadata?.name ?? '';
  await createOrKeep(
    `Role ${namespace}/${roleName}`,
    () => rbac.createNamespacedRole({ namespace, body: role }),
    // The SSH key Secret may have been renamed since: the rules follow the configuration.
    () => rbac.replaceNamespacedRole({ name: roleName, namespace, body: role }),
  );
  await createOrKeep(`RoleBinding ${namespace}/${roleName}`, () =>
    rbac.createNamespacedRoleBinding({ namespace, body: installerRoleBinding(owner) }),
  );
  const env: Record<string, string> = {
    ...Object.fromEntries(passedOn.map((name) => [name, String(config[name])])),
    ...(knownHosts !== undefined ? { SSH_KNOWN_HOSTS_LINES: knownHosts } : {}),
  };
  const job = installJob({
    software: owner,
    run,
    image: config.INSTALL_JOB_IMAGE,
    command: config.INSTALL_JOB_COMMAND,
    env,
    activeDeadlineSeconds: deadlineSeconds,
  });
  await createJobOrGetExisting(clients, job);
  return installJobName(ref.name, ref.generation, run);
}
