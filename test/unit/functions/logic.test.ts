import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { conditionFor, setCondition } from '../../../shared/k8s/conditions.js';
import { classifyApiError } from '../../../shared/k8s/api-errors.js';
import { ApiException, type V1Job } from '@kubernetes/client-node';
import { nextStep } from '../../../functions/host-lookup/next-step.js';
import { decideLaunch } from '../../../functions/kud-job-launch/launch-decision.js';
import { loadLeases, parseLeasesSource } from '../../../functions/host-lookup/lease-source.js';
import type { KubeClients } from '../../../shared/k8s/clients.js';
import { silentLogger } from '../../../shared/log.js';
import { clusterNodesFrom } from '../../../functions/software-install/cluster-nodes.js';
import { needsInstall } from '../../../functions/software-install/sweep.js';
import { runDurationSeconds } from '../../../functions/kud-job-launch/job-state.js';
import { jobState } from '../../../shared/k8s/jobs.js';
import { jobFailure } from '../../../functions/kud-job-launch/complete-job.js';
import type { Condition } from '../../../shared/schemas/kube.js';

const cond = (type: string, status: Condition['status'], generation = 1, reason = type): Condition => ({
  type,
  status,
  reason,
  message: `${type} ${status}`,
  observedGeneration: generation,
  lastTransitionTime: '2026-01-01T00:00:00Z',
});

describe('setCondition', () => {
  const t1 = new Date('2026-01-01T00:00:00Z');
  const t2 = new Date('2026-01-02T00:00:00Z');
  it('keeps lastTransitionTime while the status stays, moves it when the status changes', () => {
    const first = setCondition([], { type: 'Ready', status: 'False', reason: 'A', message: 'a' }, t1);
    const same = setCondition(first, { type: 'Ready', status: 'False', reason: 'B', message: 'b' }, t2);
    expect(same).toEqual([
      {
        type: 'Ready',
        status: 'False',
        reason: 'B',
        message: 'b',
        lastTransitionTime: '2026-01-01T00:00:00Z',
      },
    ]);
    const flipped = setCondition(
      same,
      { type: 'Ready', status: 'True', reason: 'C', message: 'c', observedGeneration: 3 },
      t2,
    );
    expect(flipped[0]).toMatchObject({
      status: 'True',
      lastTransitionTime: '2026-01-02T00:00:00Z',
      observedGeneration: 3,
    });
  });
  it('keeps the other conditions and their order, and does not mutate its input', () => {
    const list = [cond('A', 'True'), cond('B', 'True')];
    const next = setCondition(list, { type: 'A', status: 'False', reason: 'X', message: 'x' }, t1);
    expect(next.map((c) => c.type)).toEqual(['A', 'B']);
    expect(list[0]?.status).toBe('True');
    expect(conditionFor(next, 'B', 2)).toBeUndefined();
  });
});

describe('classifyApiError', () => {
  it('makes 5xx, 429 and connection failures transient (503) and the rest internal', () => {
    expect(classifyApiError(new ApiException(503, 'x', '{"message":"etcd down"}', {}), 'read').kind).toBe(
      'transient',
    );
    expect(classifyApiError(new ApiException(429, 'x', '', {}), 'read').kind).toBe('transient');
    expect(classifyApiError(Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }), 'read').kind).toBe(
      'transient',
    );
    const forbidden = classifyApiError(new ApiException(403, 'x', { message: 'no rights' }, {}), 'list pods');
    expect([forbidden.kind, forbidden.reason, forbidden.message]).toEqual([
      'internal',
      'KubernetesForbidden',
      'Kubernetes API refused to list pods: no rights',
    ]);
  });
});

describe('the sweep of host-lookup', () => {
  it('re-drives the next step of what is not Ready for its generation', () => {
    expect(nextStep([], 1)).toBe('resolve');
    expect(nextStep([cond('HostsResolved', 'True', 1)], 2)).toBe('resolve');
    expect(nextStep([cond('HostsResolved', 'True')], 1)).toBe('render');
    expect(nextStep([cond('HostsResolved', 'True'), cond('InventoryRendered', 'True')], 1)).toBe('launch');
    expect(
      nextStep(
        [
          cond('HostsResolved', 'True'),
          cond('InventoryRendered', 'True'),
          cond('JobLaunched', 'False', 1, 'PreviousJobRunning'),
        ],
        1,
      ),
    ).toBe('launch');
  });
  it('leaves alone what runs, what is Ready and what only a spec change can fix', () => {
    expect(nextStep([cond('JobLaunched', 'True')], 1)).toBe('none');
    expect(nextStep([cond('Ready', 'True')], 1)).toBe('none');
    expect(nextStep([cond('KudInstalled', 'False', 1, 'JobFailed')], 1)).toBe('none');
    expect(nextStep([cond('HostsResolved', 'False', 1, 'MacAddressMissing')], 1)).toBe('none');
    expect(nextStep([cond('HostsResolved', 'False', 1, 'HostNotFound')], 1)).toBe('resolve');
  });
  it('tries a step the API server refused (JobRefused) again at most once an hour', () => {
    const refused = (at: string) => [
      cond('HostsResolved', 'True'),
      cond('InventoryRendered', 'True'),
      { ...cond('JobLaunched', 'False', 1, 'JobRefused'), lastTransitionTime: at },
    ];
    const now = new Date('2026-01-01T02:00:00Z');
    expect(nextStep(refused('2026-01-01T01:30:00Z'), 1, now)).toBe('none');
    expect(nextStep(refused('2026-01-01T00:59:59Z'), 1, now)).toBe('launch');
  });
  it('leaves a conflicting or invalid inventory alone unless the world can fix it', () => {
    const inventory = (reason: string) => [
      cond('HostsResolved', 'True'),
      cond('InventoryRendered', 'False', 1, reason),
    ];
    expect(nextStep(inventory('ObjectConflict'), 1)).toBe('render');
    expect(nextStep(inventory('DuplicateNodeLabel'), 1)).toBe('none');
    expect(nextStep([cond('HostsResolved', 'False', 1, 'ClusterNameInUse')], 1)).toBe('resolve');
  });
  it('retries a step whose transient fault was recorded as Unknown', () => {
    expect(nextStep([cond('HostsResolved', 'Unknown', 1, 'KubernetesApiUnavailable')], 1)).toBe('resolve');
  });
});

describe('LEASES_SOURCE', () => {
  it('is a path or configmap:<ns>/<name>/<key>', () => {
    expect(parseLeasesSource('/var/lib/dhcp/dhcpd.leases')).toEqual({
      kind: 'file',
      path: '/var/lib/dhcp/dhcpd.leases',
    });
    expect(parseLeasesSource('configmap:bpa-system/leases/dhcpd.leases')).toEqual({
      kind: 'configmap',
      namespace: 'bpa-system',
      name: 'leases',
      key: 'dhcpd.leases',
    });
    expect(() => parseLeasesSource('configmap:only-ns')).toThrow(/configmap:<namespace>\/<name>\/<key>/);
    expect(() => parseLeasesSource('relative/path')).toThrow(/absolute file path/);
  });
});

describe('the lease file', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bpa-leases-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));
  // A file path never touches the API.
  const load = (path: string) => loadLeases({} as KubeClients, { kind: 'file', path }, silentLogger);

  it('that does not exist yet (no DHCP server wrote it) is no lease file: the other IP sources answer', async () => {
    await expect(load(join(dir, 'never-written.leases'))).resolves.toBeUndefined();
  });

  it('that is there but cannot be read is a transient LeasesUnreadable, for root too', async () => {
    // A directory in its place (a bind mount made before the file existed): stat works, read fails.
    await mkdir(join(dir, 'dir.leases'));
    await expect(load(join(dir, 'dir.leases'))).rejects.toMatchObject({
      kind: 'transient',
      reason: 'LeasesUnreadable',
      message: expect.stringMatching(/EISDIR/),
    });
    // A parent that is not a directory (a file mounted where a directory was meant): stat fails
    // with ENOTDIR, which is an outage, not "no lease file yet" (it was the latter before).
    await writeFile(join(dir, 'a-file'), '');
    await expect(load(join(dir, 'a-file', 'dhcpd.leases'))).rejects.toMatchObject({
      kind: 'transient',
      reason: 'LeasesUnreadable',
      message: expect.stringMatching(/ENOTDIR/),
    });
  });
});

describe('cluster ConfigMap nodes', () => {
  it('gives one node per label with every role, masters first', () => {
    expect(
      clusterNodesFrom({
        WORKER_w_1: '10.0.0.3',
        'MASTER_m-1': '10.0.0.1',
        'WORKER_m-1': '10.0.0.1',
        'hosts.ini': 'ignored',
        MASTER_empty: ' ',
      }),
    ).toEqual([
      { label: 'm-1', ip: '10.0.0.1', roles: ['master', 'worker'] },
      { label: 'w_1', ip: '10.0.0.3', roles: ['worker'] },
    ]);
  });
});

describe('the sweep of software-install', () => {
  const software = (conditions: Condition[], claim?: object) => ({
    metadata: { name: 's', generation: 1 },
    status: { conditions, ...(claim ? { claim } : {}) },
  });
  it('drives what was never handled, waits on its cluster, or lost its installer', () => {
    const now = new Date('2026-01-01T12:00:00Z');
    expect(needsInstall(software([]), now)).toBe(true);
    expect(needsInstall(software([cond('Installed', 'Unknown', 1, 'ClusterNotReady')]), now)).toBe(true);
    const claim = (expiresAt: string) => ({ generation: 1, holder: 'pod-a', expiresAt });
    expect(
      needsInstall(
        software([cond('Installed', 'Unknown', 1, 'Installing')], claim('2026-01-01T13:00:00Z')),
        now,
      ),
    ).toBe(false);
    expect(
      needsInstall(
        software([cond('Installed', 'Unknown', 1, 'Installing')], claim('2026-01-01T11:00:00Z')),
        now,
      ),
    ).toBe(true);
    expect(needsInstall(software([cond('Installed', 'False', 1, 'InstallFailed')]), now)).toBe(false);
    expect(needsInstall(software([cond('Installed', 'True'), cond('Ready', 'True')]), now)).toBe(false);
  });
});

describe('Job state', () => {
  it('reads completion and failure as the Job controller writes them', () => {
    const job = (types: string[], extra: object = {}) => ({
      status: { conditions: types.map((type) => ({ type, status: 'True' })), ...extra },
    });
    expect(jobState(job([]))).toBe('running');
    expect(jobState(job(['SuccessCriteriaMet', 'Complete']))).toBe('complete');
    // FailureTarget alone: the pods are still being terminated; Failed (with its reason) follows.
    expect(jobState(job(['FailureTarget']))).toBe('running');
    expect(jobState(job(['FailureTarget', 'Failed']))).toBe('failed');
    expect(
      runDurationSeconds(
        job(['Complete'], {
          startTime: '2026-01-01T00:00:00Z',
          completionTime: '2026-01-01T00:10:00Z',
        }) as never,
      ),
    ).toBe(600);
  });
});

describe('the KUD Job launch decision', () => {
  const owner = { uid: 'uid-p' };
  const job = (options: {
    hash?: string;
    state?: 'Complete' | 'Failed';
    generation?: number;
    retry?: string;
    ours?: boolean;
    uid?: string;
  }) => ({
    metadata: {
      name: 'kud-c',
      labels: (options.ours === false
        ? {}
        : {
            'app.kubernetes.io/managed-by': 'bpa-functions',
            'bpa.akraino.org/provisioning-uid': options.uid ?? owner.uid,
          }) as Record<string, string>,
      annotations: {
        'bpa.akraino.org/launch-hash': options.hash ?? 'h1',
        'bpa.akraino.org/provisioning-generation': String(options.generation ?? 1),
        ...(options.retry ? { 'bpa.akraino.org/retry-of': options.retry } : {}),
      },
      ownerReferences: [
        {
          apiVersion: 'bpa.akraino.org/v1alpha1',
          kind: 'Provisioning',
          name: 'p',
          uid: owner.uid,
          controller: true,
        },
      ],
    },
    status: options.state ? { conditions: [{ type: options.state, status: 'True' }] } : {},
  });
  const wanted = { launchHash: 'h1', generation: 1, retry: '', ownerUid: owner.uid };
  it('creates, keeps the same launch, and replaces another once it finished', () => {
    expect(decideLaunch(undefined, wanted)).toBe('create');
    expect(decideLaunch(job({}), wanted)).toBe('exists');
    expect(decideLaunch(job({ state: 'Complete' }), wanted)).toBe('exists');
    expect(decideLaunch(job({ hash: 'h0' }), wanted)).toBe('blocked');
    expect(decideLaunch(job({ hash: 'h0', state: 'Complete' }), wanted)).toBe('replace');
  });
  it('re-runs a failed launch for a new generation or a new retry value only', () => {
    expect(decideLaunch(job({ state: 'Failed' }), wanted)).toBe('exists');
    expect(decideLaunch(job({ state: 'Failed' }), { ...wanted, generation: 2 })).toBe('replace');
    expect(decideLaunch(job({ state: 'Failed' }), { ...wanted, retry: 'again' })).toBe('replace');
    expect(decideLaunch(job({ state: 'Failed', retry: 'again' }), { ...wanted, retry: 'again' })).toBe(
      'exists',
    );
  });
  it('never adopts a Job it did not create for this Provisioning', () => {
    expect(decideLaunch(job({ ours: false }), wanted)).toBe('conflict');
  });
  it('never takes a Job left for another Provisioning of that cluster name as the launch, whatever its hash', () => {
    expect(decideLaunch(job({ uid: 'uid-other', state: 'Complete' }), wanted)).toBe('replace');
    expect(decideLaunch(job({ uid: 'uid-other', state: 'Failed' }), wanted)).toBe('replace');
    expect(decideLaunch(job({ uid: 'uid-other' }), wanted)).toBe('blocked');
  });
});

describe('jobFailure (contract section 10)', () => {
  const failed = (reason: string): V1Job => ({
    metadata: { name: 'kud-c1' },
    spec: { activeDeadlineSeconds: 60, template: {} },
    status: { conditions: [{ type: 'Failed', status: 'True', reason }] },
  });
  const contractText = 'Job Failed, KUD not installed in Cluster c1, check pod logs';
  it('keeps the contract text as a prefix and names the pod', () => {
    expect(jobFailure(failed('BackoffLimitExceeded'), 'c1', 'kud-c1-x7k2p')).toEqual({
      step: 'KudInstalled',
      reason: 'JobFailed',
      message: `${contractText} (pod kud-c1-x7k2p)`,
    });
  });
  it('is the contract text alone when no pod is known', () => {
    expect(jobFailure(failed('BackoffLimitExceeded'), 'c1').message).toBe(contractText);
  });
  it('names the failed hosts and tasks from the installer’s output after the contract text', () => {
    const hosts = 'host w1 was unreachable at task [Ping the host over SSH]: refused';
    expect(jobFailure(failed('BackoffLimitExceeded'), 'c1', 'kud-c1-x7k2p', hosts).message).toBe(
      `${contractText} (pod kud-c1-x7k2p): ${hosts}`,
    );
  });
  it('says JobDeadlineExceeded for a Job past its deadline', () => {
    expect(jobFailure(failed('DeadlineExceeded'), 'c1', 'kud-c1-x7k2p')).toMatchObject({
      reason: 'JobDeadlineExceeded',
      message: expect.stringContaining('kud-c1 exceeded its deadline of 60 s'),
    });
  });
});
