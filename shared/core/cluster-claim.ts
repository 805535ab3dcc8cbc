import type { V1Lease } from '@kubernetes/client-node';
import { managedByLabel, managedByValue } from './names.js';

/**
 * One owner per cluster name (contract section 10). KUD keeps `/opt/kud/multi-cluster/<cluster>`
 * per node, not per namespace, so a cluster name is claimed in the whole Kubernetes cluster:
 * a Lease `cluster-<cluster>` in the functions' own namespace (which tenants cannot write)
 * names the Provisioning that holds it. Creating it is the claim: the API server lets exactly
 * one create win, so two Provisionings racing for a name cannot both get it.
 */
export interface ClaimHolder {
  namespace: string;
  name: string;
  uid: string;
}

export const clusterClaimName = (cluster: string) => `cluster-${cluster}`;
/** Label on every claim: `cluster=<cluster>`, so an operator can list them. */
export const claimClusterLabel = 'bpa.akraino.org/cluster';
const holderUidAnnotation = 'bpa.akraino.org/holder-uid';

/** `holderIdentity` is `<namespace>/<name>`: what `kubectl get lease` shows. */
export function buildClusterClaim(functionsNamespace: string, cluster: string, holder: ClaimHolder): V1Lease {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      name: clusterClaimName(cluster),
      namespace: functionsNamespace,
      labels: { [managedByLabel]: managedByValue, [claimClusterLabel]: cluster },
      annotations: { [holderUidAnnotation]: holder.uid },
    },
    spec: { holderIdentity: `${holder.namespace}/${holder.name}` },
  };
}

/** Who holds a claim, or undefined when the Lease is not a well-formed claim of ours. */
export function claimHolderOf(lease: V1Lease | undefined): ClaimHolder | undefined {
  const identity = lease?.spec?.holderIdentity;
  const uid = lease?.metadata?.annotations?.[holderUidAnnotation];
  if (!identity || !uid || lease?.metadata?.labels?.[managedByLabel] !== managedByValue) return undefined;
  const [namespace, name, ...rest] = identity.split('/');
  if (!namespace || !name || rest.length > 0) return undefined;
  return { namespace, name, uid };
}

/** What the holder's Provisioning is now, as the API says. */
export type HolderState =
  /** It exists with the claim's uid and still names this cluster (or is being renamed away). */
  | 'present'
  /** Deleted (404), or replaced by another object of the same name (another uid). */
  | 'gone';

export type ClaimVerdict =
  /** Nobody holds the name: create the claim. */
  | { kind: 'free' }
  /** This Provisioning holds it. */
  | { kind: 'mine' }
  /** The holder is gone without releasing it: take it over (replace the stale claim). */
  | { kind: 'abandoned'; holder: ClaimHolder }
  /** Another live Provisioning holds it: touch nothing, report ClusterNameInUse. */
  | { kind: 'taken'; holder: ClaimHolder };

/**
 * Decides a claim for `me`. `holderState` is only asked about another holder. A Lease of that
 * name that is not a claim of ours (no holder) counts as taken by nobody we can name, so it is
 * reported as abandoned only when it is ours and its holder is gone.
 */
export function judgeClaim(
  claim: V1Lease | undefined,
  me: ClaimHolder,
  holderState: (holder: ClaimHolder) => HolderState,
): ClaimVerdict {
  if (!claim) return { kind: 'free' };
  const holder = claimHolderOf(claim);
  if (!holder) return { kind: 'abandoned', holder: { namespace: '', name: '', uid: '' } };
  if (holder.uid === me.uid) return { kind: 'mine' };
  return holderState(holder) === 'gone' ? { kind: 'abandoned', holder } : { kind: 'taken', holder };
}

/** The contract's message for a second Provisioning naming a taken cluster. */
export const clusterNameInUseMessage = (cluster: string, holder: Pick<ClaimHolder, 'namespace' | 'name'>) =>
  `Cluster ${cluster} is already provisioned by ${holder.namespace}/${holder.name}`;
