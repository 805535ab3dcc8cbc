/** The pure rules of a Provisioning's lifecycle (contract sections 5, 10 and 12). */
import type { V1Job, V1Pod } from '@kubernetes/client-node';
import {
  buildClusterClaim,
  claimHolderOf,
  clusterNameInUseMessage,
  judgeClaim,
  type ClaimHolder,
} from '../../../shared/core/cluster-claim.js';
import { failedByDeadline, jobProgress, newestPod } from '../../../shared/core/job-progress.js';
import { buildKudJob } from '../../../shared/core/kud-job.js';
import { launchHash, type LaunchInputs } from '../../../shared/core/launch-hash.js';
import { buildCleanupJob, buildKubeconfigSecret } from '../../../shared/core/lifecycle-objects.js';
import {
  functionsObjectMeta,
  isOwned,
  markManaged,
  ownedObjectsOf,
  ownershipConflict,
  provisioningOfFunctionsObject,
  withOwnedObject,
} from '../../../shared/core/ownership.js';
import { provisioningOwnerReference } from '../../../shared/core/owner.js';
import { labelsChanged, labelsToRecord, recordedLabelsOf } from '../../../shared/core/recorded-labels.js';
import { afterRename, releasingClustersOf } from '../../../shared/core/released-clusters.js';

const owner = { name: 'prov-a', namespace: 'tenant', uid: 'uid-a' };

describe('launchHash', () => {
  const base: LaunchInputs = {
    inventorySha256: 'a'.repeat(64),
    image: 'kud:1',
    cluster: 'edge',
    podSubnet: '10.244.64.0/18',
    kudPlugins: ['ovn4nfv', 'multus'],
    installerSettings: { HTTP_PROXY: 'http://127.0.0.1:3128' },
    sshKeySecret: 'ssh-key-secret',
    namespace: 'bpa-system',
  };
  it('is stable and ignores the key order of the settings', () => {
    expect(launchHash(base)).toMatch(/^[0-9a-f]{64}$/);
    expect(launchHash({ ...base })).toBe(launchHash(base));
    expect(launchHash({ ...base, installerSettings: { B: '2', A: '1' } })).toBe(
      launchHash({ ...base, installerSettings: { A: '1', B: '2' } }),
    );
  });
  it.each<[string, Partial<LaunchInputs>]>([
    ['inventory', { inventorySha256: 'b'.repeat(64) }],
    ['image', { image: 'kud:2' }],
    ['cluster', { cluster: 'edge2' }],
    ['PodSubnet', { podSubnet: '10.0.0.0/16' }],
    ['PodSubnet removed', { podSubnet: undefined }],
    ['a plugin added', { kudPlugins: ['ovn4nfv', 'multus', 'istio'] }],
    ['plugin order', { kudPlugins: ['multus', 'ovn4nfv'] }],
    ['a setting value', { installerSettings: { HTTP_PROXY: 'http://127.0.0.2:3128' } }],
    ['settings gone', { installerSettings: undefined }],
    ['the SSH key Secret mounted', { sshKeySecret: 'other-key' }],
    ['the namespace it runs in', { namespace: 'other-system' }],
  ])('changes with %s', (_what, change) => {
    expect(launchHash({ ...base, ...change })).not.toBe(launchHash(base));
  });
  it('treats absent, null, empty subnet and plugins alike (the installer gets the same line)', () => {
    const plain = {
      inventorySha256: 'a'.repeat(64),
      image: 'i',
      cluster: 'c',
      sshKeySecret: 'k',
      namespace: 'bpa-system',
    };
    expect(launchHash({ ...plain, podSubnet: null, kudPlugins: [] })).toBe(launchHash(plain));
    expect(launchHash({ ...plain, podSubnet: '', kudPlugins: null })).toBe(launchHash(plain));
  });
});

describe('cluster-name claims', () => {
  const me: ClaimHolder = { namespace: 'tenant', name: 'prov-a', uid: 'uid-a' };
  const other: ClaimHolder = { namespace: 'other', name: 'prov-b', uid: 'uid-b' };
  const claimOf = (holder: ClaimHolder) => buildClusterClaim('bpa-system', 'edge', holder);

  it('is a Lease in the functions namespace naming its holder', () => {
    const claim = claimOf(me);
    expect(claim.metadata).toMatchObject({
      name: 'cluster-edge',
      namespace: 'bpa-system',
      labels: { 'app.kubernetes.io/managed-by': 'bpa-functions', 'bpa.akraino.org/cluster': 'edge' },
    });
    expect(claim.spec?.holderIdentity).toBe('tenant/prov-a');
    expect(claimHolderOf(claim)).toEqual(me);
  });
  it('is free, mine, taken or abandoned', () => {
    const present = () => 'present' as const;
    const gone = () => 'gone' as const;
    expect(judgeClaim(undefined, me, present)).toEqual({ kind: 'free' });
    expect(judgeClaim(claimOf(me), me, gone)).toEqual({ kind: 'mine' });
    expect(judgeClaim(claimOf(other), me, present)).toEqual({ kind: 'taken', holder: other });
    expect(judgeClaim(claimOf(other), me, gone)).toEqual({ kind: 'abandoned', holder: other });
  });
  it('does not trust a Lease without our label', () => {
    const forged = claimOf(other);
    forged.metadata!.labels = {};
    expect(claimHolderOf(forged)).toBeUndefined();
    expect(judgeClaim(forged, me, () => 'present').kind).toBe('abandoned');
  });
  it('says who holds the name, in the contract wording', () => {
    expect(clusterNameInUseMessage('edge', other)).toBe(
      'Cluster edge is already provisioned by other/prov-b',
    );
  });
});

describe('recorded labels', () => {
  it('records cluster and cluster-type only', () => {
    expect(labelsToRecord({ cluster: 'edge', 'cluster-type': 'virtlet-vm', team: 'x' })).toEqual({
      cluster: 'edge',
      'cluster-type': 'virtlet-vm',
    });
    expect(labelsToRecord(undefined)).toEqual({});
  });
  it('sees a changed, added or removed label', () => {
    const status = { observedLabels: { cluster: 'edge' } };
    expect(labelsChanged({ cluster: 'edge' }, status)).toBe(false);
    expect(labelsChanged({ cluster: 'edge', other: 'x' }, status)).toBe(false);
    expect(labelsChanged({ cluster: 'Edge_1' }, status)).toBe(true);
    expect(labelsChanged({ cluster: 'edge', 'cluster-type': 'virtlet-vm' }, status)).toBe(true);
    expect(labelsChanged({}, status)).toBe(true);
  });
  it('has nothing to compare with before labels are recorded', () => {
    expect(recordedLabelsOf({})).toBeUndefined();
    expect(recordedLabelsOf({ observedLabels: 'edge' })).toBeUndefined();
    expect(labelsChanged({ cluster: 'x' }, {})).toBe(false);
  });
});

describe('ownership by uid (never adopt, contract section 12)', () => {
  const lookAlike = markManaged({
    metadata: {
      name: 'edge-configmap',
      namespace: 'tenant',
      uid: 'uid-forged',
      ownerReferences: [provisioningOwnerReference(owner)],
    },
  });
  const recorded = { ...lookAlike, metadata: { ...lookAlike.metadata, uid: 'uid-cm' } };
  const owned = [{ kind: 'ConfigMap', namespace: 'tenant', name: 'edge-configmap', uid: 'uid-cm' }];
  it('counts an object as ours only when its uid is recorded, whatever its labels and owner references', () => {
    expect(isOwned('ConfigMap', recorded.metadata, { owner, owned })).toBe(true);
    expect(isOwned('ConfigMap', lookAlike.metadata, { owner, owned })).toBe(false);
    expect(isOwned('ConfigMap', lookAlike.metadata, { owner, owned: [] })).toBe(false);
    expect(isOwned('Secret', recorded.metadata, { owner, owned })).toBe(false);
  });
  it('trusts the uid label in the functions’ namespace only (tenants cannot write there)', () => {
    const meta = { ...functionsObjectMeta(owner, 'edge', 'bpa-system', 'kud-edge'), uid: 'uid-job' };
    expect(isOwned('Job', meta, { owner, owned: [], functionsNamespace: 'bpa-system' })).toBe(true);
    expect(isOwned('Job', meta, { owner, owned: [] })).toBe(false);
    const inTenant = { ...meta, namespace: 'tenant' };
    expect(isOwned('Job', inTenant, { owner, owned: [], functionsNamespace: 'bpa-system' })).toBe(false);
    expect(provisioningOfFunctionsObject(meta)).toEqual({
      namespace: 'tenant',
      name: 'prov-a',
      uid: 'uid-a',
    });
    expect(meta.ownerReferences).toBeUndefined();
  });
  it('records one uid per object and ignores malformed entries', () => {
    const next = withOwnedObject(owned, { ...owned[0]!, uid: 'uid-new' });
    expect(next).toEqual([{ ...owned[0], uid: 'uid-new' }]);
    expect(ownedObjectsOf({ ownedObjects: [{ kind: 'ConfigMap' }, 'x', owned[0]] })).toEqual(owned);
  });
  it('names a foreign object and what to do', () => {
    expect(ownershipConflict('ConfigMap', recorded, { owner, owned })).toBeUndefined();
    expect(ownershipConflict('ConfigMap', undefined, { owner, owned })).toBeUndefined();
    expect(
      ownershipConflict('Job', { metadata: { name: 'kud-edge', namespace: 'tenant' } }, { owner, owned }),
    ).toBe(
      'Job tenant/kud-edge already exists and was not created by bpa-functions for Provisioning tenant/prov-a; it is left untouched (delete or rename it to proceed)',
    );
  });
});

describe('objects beside the Job', () => {
  it('writes the functions’ installer settings into the KUD Job env, kud-installer by reference otherwise', () => {
    const input = { owner, cluster: 'edge', inventorySha256: 'a'.repeat(64) };
    const container = (job: V1Job) => job.spec?.template.spec?.containers[0];
    expect(container(buildKudJob(input))?.envFrom).toEqual([
      { configMapRef: { name: 'kud-installer', optional: true } },
    ]);
    const withSettings = container(buildKudJob(input, { installerEnv: { B: '2', A: '1' } }));
    expect(withSettings?.env).toEqual([
      { name: 'A', value: '1' },
      { name: 'B', value: '2' },
    ]);
    expect(withSettings?.envFrom).toBeUndefined();
  });
  it('publishes the kubeconfig under key value', () => {
    const secret = buildKubeconfigSecret(owner, 'edge', 'apiVersion: v1\n');
    expect(secret.metadata?.name).toBe('edge-admin-kubeconfig');
    expect(secret.stringData).toEqual({ value: 'apiVersion: v1\n' });
    expect(secret.metadata?.namespace).toBe('tenant');
  });
  it('cleans only the cluster directory, on the host network, in the functions’ namespace, on the KUD node', () => {
    const job = buildCleanupJob(owner, 'edge', {
      image: 'kud:1',
      functionsNamespace: 'bpa-system',
      nodeName: 'node-1',
    });
    const pod = job.spec?.template.spec;
    expect(job.metadata?.name).toBe('kud-edge-cleanup');
    expect(job.metadata?.namespace).toBe('bpa-system');
    expect(job.metadata?.labels?.['bpa.akraino.org/provisioning-uid']).toBe('uid-a');
    expect(pod?.nodeName).toBe('node-1');
    expect(pod?.automountServiceAccountToken).toBe(false);
    expect(pod?.hostNetwork).toBe(true);
    expect(pod?.containers[0]?.args).toEqual(['rm -rf -- /opt/kud/multi-cluster/edge']);
    expect(job.spec?.activeDeadlineSeconds).toBe(300);
  });
});

describe('Job progress', () => {
  const job: V1Job = {
    metadata: { name: 'kud-edge' },
    spec: { activeDeadlineSeconds: 600, template: {} },
    status: { startTime: new Date('2026-01-01T00:00:00Z') },
  };
  const pod = (name: string, created: string, extra: Partial<V1Pod['status']> = {}): V1Pod => ({
    metadata: { name, creationTimestamp: new Date(created) },
    status: { phase: 'Pending', ...extra },
  });
  it('shows the pod, its waiting reason and the time left', () => {
    const waiting = pod('kud-edge-x', '2026-01-01T00:00:01Z', {
      containerStatuses: [
        {
          name: 'kud',
          image: 'i',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: {
            waiting: { reason: 'CreateContainerConfigError', message: 'secret "ssh-key-secret" not found' },
          },
        },
      ],
    });
    expect(jobProgress(job, waiting, new Date('2026-01-01T00:01:40Z'))).toEqual({
      name: 'kud-edge',
      pod: 'kud-edge-x',
      phase: 'Pending',
      waitingReason: 'CreateContainerConfigError',
      waitingMessage: 'secret "ssh-key-secret" not found',
      deadline: '2026-01-01T00:10:00Z',
      secondsLeft: 500,
    });
  });
  it('picks the newest pod and never counts below zero', () => {
    const older = pod('a', '2026-01-01T00:00:01Z');
    const newer = pod('b', '2026-01-01T00:00:05Z');
    expect(newestPod([older, newer])?.metadata?.name).toBe('b');
    expect(jobProgress(job, undefined, new Date('2026-01-02T00:00:00Z')).secondsLeft).toBe(0);
  });
  it('tells a deadline from other failures', () => {
    const failed = (reason: string): V1Job => ({
      status: { conditions: [{ type: 'Failed', status: 'True', reason }] },
    });
    expect(failedByDeadline(failed('DeadlineExceeded'))).toBe(true);
    expect(failedByDeadline(failed('BackoffLimitExceeded'))).toBe(false);
  });
});

describe('afterRename (the old names a renamed cluster still releases)', () => {
  const now = new Date('2026-01-01T00:00:00Z');
  it('adds the previous name once, with whether a KUD Job ran for it', () => {
    const once = afterRename([], 'a', 'b', true, now);
    expect(once).toEqual([{ cluster: 'a', since: '2026-01-01T00:00:00.000Z', launched: true }]);
    expect(afterRename(once, 'a', 'c', false, new Date())).toEqual(once);
  });
  it('drops a name that is the cluster again (renamed back), adds nothing without a change', () => {
    const list = afterRename([], 'a', 'b', true, now);
    expect(afterRename(list, 'b', 'a', true, now)).toEqual([
      { cluster: 'b', since: '2026-01-01T00:00:00.000Z', launched: true },
    ]);
    expect(afterRename(list, 'b', 'b', true, now)).toEqual(list);
    expect(afterRename([], undefined, 'b', false, now)).toEqual([]);
  });
  it('ignores malformed status entries', () => {
    expect(
      releasingClustersOf({
        releasingClusters: [{ cluster: 'a' }, 'x', { cluster: 'b', since: 't', launched: false }],
      }),
    ).toEqual([{ cluster: 'b', since: 't', launched: false }]);
    expect(releasingClustersOf({ releasingClusters: 'a' })).toEqual([]);
  });
});
