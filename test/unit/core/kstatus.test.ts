import { catalogueStall, imageStall, kstatusVerdict, withKstatus } from '../../../shared/core/kstatus.js';
import { conditionReasons, type ReasonSpec } from '../../../shared/reasons.js';
import type { Condition } from '../../../shared/schemas/kube.js';

const at = (generation: number, deletionTimestamp?: string) => ({
  metadata: { generation, ...(deletionTimestamp ? { deletionTimestamp } : {}) },
});
const cond = (
  type: string,
  status: Condition['status'],
  reason: string,
  observedGeneration = 2,
): Condition => ({
  type,
  status,
  reason,
  message: `${type} ${reason}`,
  observedGeneration,
  lastTransitionTime: '2026-01-01T00:00:00Z',
});

describe('kstatusVerdict', () => {
  it('is neither once Ready is True for the current generation, whatever the steps say', () => {
    expect(
      kstatusVerdict(at(2), [
        cond('KudInstalled', 'True', 'KudInstalled'),
        cond('Ready', 'True', 'ClusterReady'),
      ]),
    ).toBeUndefined();
  });

  it('is Reconciling when Ready is True only for an older generation', () => {
    expect(kstatusVerdict(at(3), [cond('Ready', 'True', 'ClusterReady', 2)])).toEqual({
      type: 'Reconciling',
      reason: 'Pending',
      message: 'Generation 3 is not reconciled yet',
    });
  });

  it('is Reconciling while a step runs or waits on the world', () => {
    expect(kstatusVerdict(at(2), [cond('Ready', 'Unknown', 'Provisioning')])?.type).toBe('Reconciling');
    expect(
      kstatusVerdict(at(2), [
        cond('HostsResolved', 'False', 'HostNotFound'),
        cond('Ready', 'False', 'HostNotFound'),
      ]),
    ).toEqual({ type: 'Reconciling', reason: 'HostNotFound', message: 'Ready HostNotFound' });
    // A transient fault: Unknown with the error's own reason, not in the catalogue.
    expect(kstatusVerdict(at(2), [cond('JobLaunched', 'Unknown', 'KubernetesApiUnavailable')])?.type).toBe(
      'Reconciling',
    );
    // A vanished Job: a new one is launched.
    expect(kstatusVerdict(at(2), [cond('KudInstalled', 'False', 'JobMissing')])?.type).toBe('Reconciling');
  });

  it('is Stalled when a step cannot go on without a change, with its reason and message', () => {
    expect(
      kstatusVerdict(at(2), [
        cond('KudInstalled', 'False', 'JobFailed'),
        cond('Ready', 'False', 'JobFailed'),
      ]),
    ).toEqual({ type: 'Stalled', reason: 'JobFailed', message: 'Ready JobFailed' });
    for (const reason of [
      'Cancelled',
      'JobRefused',
      'InvalidProvisioning',
      'ObjectConflict',
      'ClusterNameInUse',
    ])
      expect(kstatusVerdict(at(2), [cond('Ready', 'False', reason)])?.type).toBe('Stalled');
    // A False reason outside the catalogue: the sweep never retries it.
    expect(kstatusVerdict(at(2), [cond('Ready', 'False', 'KubernetesForbidden')])?.type).toBe('Stalled');
  });

  it('ignores the failures of older generations', () => {
    expect(kstatusVerdict(at(3), [cond('Ready', 'False', 'JobFailed', 2)])?.type).toBe('Reconciling');
  });

  it('is Reconciling, reason Paused, for a paused object that is not Ready, even one that failed', () => {
    const paused = cond('Paused', 'True', 'Paused');
    expect(kstatusVerdict(at(2), [cond('Ready', 'Unknown', 'Provisioning'), paused])).toEqual({
      type: 'Reconciling',
      reason: 'Paused',
      message: 'Paused Paused',
    });
    expect(kstatusVerdict(at(2), [cond('Ready', 'False', 'JobFailed'), paused])?.type).toBe('Reconciling');
    // Ready stays Ready: a paused cluster that is installed is Current.
    expect(kstatusVerdict(at(2), [cond('Ready', 'True', 'ClusterReady'), paused])).toBeUndefined();
    // Resumed: Paused False is neither a stall nor the pending step; a failure shows again.
    const resumed = cond('Paused', 'False', 'Resumed');
    expect(kstatusVerdict(at(2), [cond('Ready', 'False', 'JobFailed'), resumed])?.type).toBe('Stalled');
    expect(kstatusVerdict(at(2), [resumed])).toEqual({
      type: 'Reconciling',
      reason: 'Pending',
      message: 'Generation 2 is not reconciled yet',
    });
  });

  it('is Reconciling while deleting', () => {
    expect(
      kstatusVerdict(at(2, '2026-01-01T00:00:00Z'), [cond('Ready', 'False', 'JobFailed')]),
    ).toMatchObject({
      type: 'Reconciling',
      reason: 'Deleting',
    });
  });

  it('judges the Image by its phase: Failed stalls, an upload in progress does not', () => {
    const uploading = [cond('Uploaded', 'False', 'Uploading'), cond('Ready', 'False', 'Uploading')];
    expect(kstatusVerdict(at(2), uploading, imageStall('Uploading'))?.type).toBe('Reconciling');
    const failed = [cond('Uploaded', 'True', 'Uploaded'), cond('Ready', 'False', 'ChecksumMismatch')];
    expect(kstatusVerdict(at(2), failed, imageStall('Failed'))).toMatchObject({
      type: 'Stalled',
      reason: 'ChecksumMismatch',
    });
    expect(kstatusVerdict(at(2), [cond('Ready', 'True', 'Verified')], imageStall('Ready'))).toBeUndefined();
  });
});

describe('catalogueStall over the whole catalogue', () => {
  it('stalls on every False reason whose sweep is change or hourly, and on none the sweep retries unless listed', () => {
    const mustStall = new Set([
      'ClusterNameInUse',
      'HostInUse',
      'HostProvisioningFailed',
      'ObjectConflict',
      'PreflightFailed',
      'VmNamespacesNotConfigured',
    ]);
    for (const [reason, spec] of Object.entries(conditionReasons as Record<string, ReasonSpec>)) {
      const stalls = catalogueStall(cond('Ready', 'False', reason));
      const expected = spec.sweep === 'change' || spec.sweep === 'hourly' || mustStall.has(reason);
      expect({ reason, stalls }).toEqual({ reason, stalls: expected });
      expect(catalogueStall(cond('Ready', 'Unknown', reason))).toBe(false);
    }
  });
});

describe('withKstatus', () => {
  const base = { phase: 'x', conditions: [cond('HostsResolved', 'False', 'HostNotFound'), { junk: true }] };

  it('sets observedGeneration and appends one derived condition, keeping the others as they are', () => {
    const now = new Date('2026-02-02T00:00:00.000Z');
    const out = withKstatus(at(2), base, catalogueStall, now);
    expect(out.observedGeneration).toBe(2);
    expect(out.phase).toBe('x');
    expect(out.conditions).toEqual([
      ...base.conditions,
      {
        type: 'Reconciling',
        status: 'True',
        reason: 'HostNotFound',
        message: 'HostsResolved HostNotFound',
        lastTransitionTime: '2026-02-02T00:00:00Z',
        observedGeneration: 2,
      },
    ]);
  });

  it('keeps the transition time while Reconciling stays True, and swaps it for Stalled on a failure', () => {
    const first = withKstatus(at(2), base, catalogueStall, new Date('2026-02-02T00:00:00Z'));
    const again = withKstatus(
      at(2),
      {
        ...first,
        conditions: [...(first.conditions as unknown[]), cond('Ready', 'Unknown', 'Provisioning')],
      },
      catalogueStall,
      new Date('2026-02-03T00:00:00Z'),
    );
    const reconciling = (again.conditions as Condition[]).filter((c) => c.type === 'Reconciling');
    expect(reconciling).toHaveLength(1);
    expect(reconciling[0]?.lastTransitionTime).toBe('2026-02-02T00:00:00Z');
    const failed = withKstatus(at(2), { conditions: [cond('Ready', 'False', 'JobFailed')] });
    const types = (failed.conditions as Condition[]).map((c) => c.type);
    expect(types).toEqual(['Ready', 'Stalled']);
  });

  it('removes both once Ready is True', () => {
    const stalled = withKstatus(at(2), { conditions: [cond('Ready', 'False', 'JobFailed')] });
    const ready = withKstatus(at(2), {
      conditions: [
        ...(stalled.conditions as Condition[]).filter((c) => c.type !== 'Ready'),
        cond('Ready', 'True', 'ClusterReady'),
      ],
    });
    expect((ready.conditions as Condition[]).map((c) => c.type)).toEqual(['Ready']);
  });
});
