import { RbacAuthorizationV1Api, type V1Role, type V1RoleBinding } from '@kubernetes/client-node';
import { isDeepStrictEqual } from 'node:util';
import { BpaError } from '../../shared/errors.js';
import { classifyApiError, isConflict, readOrUndefined } from '../../shared/k8s/api-errors.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import {
  isOwned,
  ownedObjectsOf,
  withOwned,
  type OwnedObject,
} from '../../shared/k8s/install-owned-objects.js';
import { applyStatusDecided } from '../../shared/k8s/status-apply.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import { Reason } from '../../shared/reasons.js';
import type { SoftwareInstallConfig } from './config.js';
import {
  installJob,
  installJobName,
  installerRole,
  installerRoleBinding,
  installerServiceAccount,
} from './install-job/job-objects.js';
import { softwareRef, softwareTarget } from './software-status.js';
import { functionManager } from './name.js';

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
  'INSTALL_POLL_SECONDS',
] as const;

/** What one object of the install run needs: how to create it, read the one in the way, and (Role) bring ours up to date. */
interface Step<T extends { metadata?: { name?: string; uid?: string } }> {
  kind: 'ServiceAccount' | 'Role' | 'RoleBinding' | 'Job';
  body: T;
  create: () => Promise<T>;
  read: () => Promise<T | undefined>;
  /** Ours, found on a conflict: replaced when its content differs from `body` (the Role's rules follow SSH_KEY_SECRET). */
  update?: (existing: T) => Promise<unknown>;
  /** Ours but not what we would create (a RoleBinding's roleRef and subjects cannot change): a conflict all the same. */
  matches?: (existing: T) => boolean;
}

export const objectConflict = (what: string, uid: string | undefined) =>
  new BpaError(
    Reason.ObjectConflict,
    `${what} exists and was not created by bpa-functions for this Software (its uid ${uid ?? '?'} is not the one recorded in status.ownedObjects); it is left untouched and no install Job is created: delete it, or rename the Software`,
    'invalid',
    { object: what },
  );

/**
 * Creates the objects of a claimed Software generation's install run (contract sections 11, 12):
 * its ServiceAccount, Role, RoleBinding and Job, each recorded by uid in the Software's
 * `status.ownedObjects` right after it is created (docs/adr/0013-tenancy.md point 2). One of that
 * name that is already there counts as ours only by that uid: a look-alike (any labels and owner
 * references, another uid) is ObjectConflict and is never touched, replaced or used, and nothing
 * after it is created. Idempotent: a second call finds its own objects and goes on. Returns the
 * Job's name. The Job writes the outcome to the Software's status.
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
  let recorded: StoredObject = claimed;

  const record = async (object: OwnedObject) => {
    const result = await applyStatusDecided(
      clients,
      softwareTarget(namespace, ref.name),
      functionManager,
      (fresh) => {
        if (fresh.metadata.uid !== ref.uid) return undefined;
        if (isOwned(fresh, object)) return undefined;
        return { conditions: [], fields: { ownedObjects: withOwned(ownedObjectsOf(fresh), object) } };
      },
      // The object as last written: the first attempt's base (a 409 reads again).
      { first: recorded },
    );
    if (result.outcome !== 'gone') recorded = result.object;
  };

  async function ensure<T extends { metadata?: { name?: string; uid?: string } }>(step: Step<T>) {
    const name = step.body.metadata?.name ?? '';
    const what = `${step.kind} ${namespace}/${name}`;
    try {
      const created = await step.create();
      await record({ kind: step.kind, namespace, name, uid: created.metadata?.uid ?? '' });
      return;
    } catch (error) {
      if (!isConflict(error)) throw classifyApiError(error, `create ${what}`);
    }
    const existing = await step.read();
    // Deleted between our create and read: the next delivery or sweep creates it.
    if (!existing) throw classifyApiError(new Error('gone after a conflict'), `create ${what}`);
    const uid = existing.metadata?.uid;
    if (!uid || !isOwned(recorded, { kind: step.kind, namespace, name, uid }))
      throw objectConflict(what, uid);
    if (step.matches && !step.matches(existing)) throw objectConflict(what, uid);
    await step.update?.(existing);
  }

  const account = installerServiceAccount(owner);
  const accountName = account.metadata?.name ?? '';
  await ensure({
    kind: 'ServiceAccount',
    body: account,
    create: () => clients.core.createNamespacedServiceAccount({ namespace, body: account }),
    read: () =>
      readOrUndefined(`read ServiceAccount ${namespace}/${accountName}`, () =>
        clients.core.readNamespacedServiceAccount({ name: accountName, namespace }),
      ),
  });
  const role: V1Role = installerRole(owner, config.SSH_KEY_SECRET);
  const roleName = role.metadata?.name ?? '';
  await ensure<V1Role>({
    kind: 'Role',
    body: role,
    create: () => rbac.createNamespacedRole({ namespace, body: role }),
    read: () =>
      readOrUndefined(`read Role ${namespace}/${roleName}`, () =>
        rbac.readNamespacedRole({ name: roleName, namespace }),
      ),
    // Ours (by uid): the SSH key Secret may have been renamed since, so the rules follow the
    // configuration, written under the read resourceVersion (a 409: the next delivery).
    update: async (existing) => {
      if (isDeepStrictEqual(normalRules(existing), normalRules(role))) return;
      try {
        await rbac.replaceNamespacedRole({
          name: roleName,
          namespace,
          body: {
            ...role,
            metadata: { ...role.metadata, resourceVersion: existing.metadata?.resourceVersion },
          },
        });
      } catch (error) {
        throw classifyApiError(error, `update Role ${namespace}/${roleName}`);
      }
    },
  });
  const binding = installerRoleBinding(owner);
  await ensure<V1RoleBinding>({
    kind: 'RoleBinding',
    body: binding,
    create: () => rbac.createNamespacedRoleBinding({ namespace, body: binding }),
    read: () =>
      readOrUndefined(`read RoleBinding ${namespace}/${roleName}`, () =>
        rbac.readNamespacedRoleBinding({ name: roleName, namespace }),
      ),
    // Plain projections: the client hands back class instances (V1RoleRef, RbacV1Subject), which
    // a strict deep comparison with our plain body never equals, so our own binding of an earlier
    // run was a conflict and a retry could never launch.
    matches: (existing) =>
      isDeepStrictEqual(
        { apiGroup: existing.roleRef.apiGroup, kind: existing.roleRef.kind, name: existing.roleRef.name },
        binding.roleRef,
      ) &&
      isDeepStrictEqual(
        (existing.subjects ?? []).map(({ kind, name, namespace: ns }) => ({ kind, name, namespace: ns })),
        binding.subjects,
      ),
  });
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
  const jobName = installJobName(ref.name, ref.generation, run);
  await ensure({
    kind: 'Job',
    body: job,
    create: () => clients.batch.createNamespacedJob({ namespace, body: job }),
    read: () =>
      readOrUndefined(`read Job ${namespace}/${jobName}`, () =>
        clients.batch.readNamespacedJob({ name: jobName, namespace }),
      ),
  });
  return jobName;
}

/** A Role's rules as the API server stores them (absent lists and empty ones alike). */
const normalRules = (role: V1Role) =>
  (role.rules ?? []).map((rule) => ({
    apiGroups: rule.apiGroups ?? [],
    resources: rule.resources ?? [],
    verbs: rule.verbs,
    resourceNames: rule.resourceNames ?? [],
    nonResourceURLs: rule.nonResourceURLs ?? [],
  }));
