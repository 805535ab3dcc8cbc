import { KubeConfig } from '@kubernetes/client-node';
import { runSweep, takeSweepSlot } from '../../../shared/k8s/sweep.js';
import { provisioningsResource } from '../../../shared/k8s/resources.js';
import { notOnboardedNamespace } from '../../../shared/k8s/api-errors.js';
import { createLogger } from '../../../shared/log.js';

// One sweep per interval per function instance (contract section 12): the slot is taken before
// any await, so pings that arrive together cannot all sweep. The flood against real servers and a
// real API server is test/resilience/hostile-tenant-rbac.test.ts.
describe('takeSweepSlot', () => {
  it('gives one slot per interval, per instance and function/kind', () => {
    const instance = new KubeConfig();
    const other = new KubeConfig();
    const t0 = 1_000_000;
    expect(takeSweepSlot(instance, 'host-lookup/Provisioning', 30, t0)).toEqual({ taken: true });
    expect(takeSweepSlot(instance, 'host-lookup/Provisioning', 30, t0 + 1)).toEqual({
      taken: false,
      secondsLeft: 30,
    });
    expect(takeSweepSlot(instance, 'host-lookup/Provisioning', 30, t0 + 29_000)).toEqual({
      taken: false,
      secondsLeft: 1,
    });
    // Another function of the same process, another instance: their own slots.
    expect(takeSweepSlot(instance, 'kud-job-launch/Provisioning', 30, t0 + 1)).toEqual({ taken: true });
    expect(takeSweepSlot(other, 'host-lookup/Provisioning', 30, t0 + 1)).toEqual({ taken: true });
    // The interval measured from the start of the last sweep.
    expect(takeSweepSlot(instance, 'host-lookup/Provisioning', 30, t0 + 30_000)).toEqual({ taken: true });
    expect(takeSweepSlot(instance, 'host-lookup/Provisioning', 30, t0 + 30_001)).toMatchObject({
      taken: false,
    });
  });

  it('gives every ping a slot with an interval of 0', () => {
    const instance = new KubeConfig();
    expect([1, 2, 3].map((t) => takeSweepSlot(instance, 'x/Software', 0, t).taken)).toEqual([
      true,
      true,
      true,
    ]);
  });
});

describe('runSweep', () => {
  it('lists once for 100 pings that arrive together, and answers the rest without an API call', async () => {
    const kubeConfig = new KubeConfig();
    // No API server: a list that is made fails, so each one shows as a rejected sweep.
    kubeConfig.loadFromOptions({
      clusters: [{ name: 'c', server: 'http://127.0.0.1:1' }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'c', cluster: 'c', user: 'u' }],
      currentContext: 'c',
    });
    const context = {
      functionName: 'host-lookup',
      kubeConfig,
      config: { SWEEP_NAMESPACES: ['tenant'], SWEEP_INTERVAL_SECONDS: 30 },
      send: async () => undefined,
      log: createLogger({ sink: () => undefined, level: 'error' }),
    };
    const results = await Promise.allSettled(
      Array.from({ length: 100 }, () =>
        runSweep(context, {
          resource: provisioningsResource,
          kind: 'Provisioning',
          redrive: async () => undefined,
        }),
      ),
    );
    // Exactly one sweep went to the API (and failed: nothing listens); 99 returned at once.
    expect(results.filter((r) => r.status === 'rejected')).toHaveLength(1);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(99);
  });
});

describe('notOnboardedNamespace', () => {
  const refusal = (user: string, resource: string, namespace: string) =>
    `provisionings.bpa.akraino.org "edge" is forbidden: User "system:serviceaccount:${user}" cannot update resource "${resource}" in API group "bpa.akraino.org" in the namespace "${namespace}"`;

  it('names the tenant namespace a function’s ServiceAccount may not write in', () => {
    expect(notOnboardedNamespace(refusal('bpa-system:host-lookup', 'provisionings/status', 'tenant-a'))).toBe(
      'tenant-a',
    );
  });

  it('is not about the functions’ own namespace, nor about what no tenant binding grants', () => {
    // A refusal in its own namespace is a missing Role (a bug), not onboarding.
    expect(
      notOnboardedNamespace(refusal('bpa-system:host-lookup', 'provisionings/status', 'bpa-system')),
    ).toBeUndefined();
    // BareMetalHosts and VM pods are the operator's Roles (BMH_NAMESPACE, VM_NAMESPACES).
    expect(
      notOnboardedNamespace(refusal('bpa-system:host-lookup', 'baremetalhosts', 'metal3')),
    ).toBeUndefined();
    expect(notOnboardedNamespace(refusal('bpa-system:host-lookup', 'pods', 'vms'))).toBeUndefined();
    expect(notOnboardedNamespace('the server could not find the requested resource')).toBeUndefined();
  });
});
