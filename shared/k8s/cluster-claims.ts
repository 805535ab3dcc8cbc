import { CoordinationV1Api, type V1Lease } from '@kubernetes/client-node';
import {
  buildClusterClaim,
  claimHolderOf,
  clusterClaimName,
  judgeClaim,
  type ClaimHolder,
  type ClaimVerdict,
  type HolderState,
} from '../core/cluster-claim.js';
import { transient } from '../errors.js';
import type { KubeClients } from './clients.js';
import { classifyApiError, isConflict, isNotFound, readOrUndefined } from './api-errors.js';
import { readProvisioning } from './provisioning.js';

/**
 * The cluster-name claims (shared/core/cluster-claim.ts) in the API: one Lease per name in the
 * functions' own namespace. `claimClusterName` takes a free or abandoned name for a Provisioning
 * or says who holds it; `releaseClusterName` gives a name up. Only the create decides, so two
 * Provisionings racing for one name (in one namespace or in two) cannot both win.
 */
const leasesOf = (clients: KubeClients) => clients.kubeConfig.makeApiClient(CoordinationV1Api);

function readClaim(api: CoordinationV1Api, namespace: string, cluster: string): Promise<V1Lease | undefined> {
  const name = clusterClaimName(cluster);
  return readOrUndefined(`read Lease ${namespace}/${name}`, () =>
    api.readNamespacedLease({ name, namespace }),
  );
}

/** Is the holder's Provisioning still there (same uid)? */
async function holderState(clients: KubeClients, holder: ClaimHolder): Promise<HolderState> {
  const live = await readProvisioning(clients, holder.namespace, holder.name);
  return live && live.metadata.uid === holder.uid ? 'present' : 'gone';
}

export type ClaimOutcome = { kind: 'mine' } | { kind: 'taken'; holder: ClaimHolder };

export async function claimClusterName(
  clients: KubeClients,
  functionsNamespace: string,
  cluster: string,
  me: ClaimHolder,
): Promise<ClaimOutcome> {
  const api = leasesOf(clients);
  const name = clusterClaimName(cluster);
  // A new Provisioning's name is most often free: create first, and read only when a claim
  // exists (409), which saves a GET per Provisioning (issue 26: API requests per Provisioning).
  if (await createClaim(api, functionsNamespace, cluster, me)) return { kind: 'mine' };
  for (let attempt = 1; attempt <= 3; attempt++) {
    const claim = await readClaim(api, functionsNamespace, cluster);
    const holder = claimHolderOf(claim);
    const state = holder && holder.uid !== me.uid ? await holderState(clients, holder) : 'present';
    const verdict: ClaimVerdict = judgeClaim(claim, me, () => state);
    if (verdict.kind === 'mine') return { kind: 'mine' };
    if (verdict.kind === 'taken') return verdict;
    if (verdict.kind === 'abandoned' && claim) {
      // The holder is gone without releasing: delete exactly that claim (resourceVersion), then race.
      try {
        await api.deleteNamespacedLease({
          name,
          namespace: functionsNamespace,
          body: { preconditions: { resourceVersion: claim.metadata?.resourceVersion } },
        });
      } catch (error) {
        if (!isNotFound(error) && !isConflict(error))
          throw classifyApiError(error, `delete Lease ${functionsNamespace}/${name}`);
      }
    }
    if (await createClaim(api, functionsNamespace, cluster, me)) return { kind: 'mine' };
    // Someone else created it first: read again and judge.
  }
  throw transient(
    'ClusterClaimConflict',
    `The claim of cluster name ${cluster} kept changing; it is tried again`,
  );
}

/** Creates the claim: true when it is now `me`'s, false when a claim of that name exists (409). */
async function createClaim(
  api: CoordinationV1Api,
  functionsNamespace: string,
  cluster: string,
  me: ClaimHolder,
): Promise<boolean> {
  try {
    await api.createNamespacedLease({
      namespace: functionsNamespace,
      body: buildClusterClaim(functionsNamespace, cluster, me),
    });
    return true;
  } catch (error) {
    if (isConflict(error)) return false;
    throw classifyApiError(error, `create Lease ${functionsNamespace}/${clusterClaimName(cluster)}`);
  }
}

/** Gives the name up if `me` holds it (a claim of another holder is never touched). */
export async function releaseClusterName(
  clients: KubeClients,
  functionsNamespace: string,
  cluster: string,
  me: Pick<ClaimHolder, 'uid'>,
): Promise<void> {
  const api = leasesOf(clients);
  const claim = await readClaim(api, functionsNamespace, cluster);
  if (claimHolderOf(claim)?.uid !== me.uid) return;
  try {
    await api.deleteNamespacedLease({
      name: clusterClaimName(cluster),
      namespace: functionsNamespace,
      body: { preconditions: { resourceVersion: claim?.metadata?.resourceVersion } },
    });
  } catch (error) {
    if (!isNotFound(error) && !isConflict(error))
      throw classifyApiError(error, `delete Lease ${functionsNamespace}/${clusterClaimName(cluster)}`);
  }
}
