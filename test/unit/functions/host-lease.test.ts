import { hostLeaseName, leaseState, microTime } from '../../../functions/software-install/host-lease.js';
import {
  backoffDelayMs,
  defaultRetryPolicy,
  isRetryable,
} from '../../../functions/software-install/ssh/host-install.js';

const at = (iso: string) => new Date(iso);

test('one Lease name per host address, a valid DNS-1123 name', () => {
  expect(hostLeaseName('10.0.0.5')).toBe('bpa-apt-10-0-0-5');
  expect(hostLeaseName('FD00::1')).toBe('bpa-apt-fd00-1');
  expect(hostLeaseName('fd00::')).toBe('bpa-apt-fd00');
  for (const ip of ['10.0.0.5', 'fd00::1', '127.0.0.200'])
    expect(hostLeaseName(ip)).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
});

describe('leaseState', () => {
  const lease = (holderIdentity: string | undefined, renewTime: string, leaseDurationSeconds = 30) => ({
    spec: { holderIdentity, renewTime: at(renewTime), leaseDurationSeconds },
  });
  const now = at('2026-01-01T00:00:30Z');

  it('is free when there is none, nobody holds it, or we do', () => {
    expect(leaseState(undefined, 'me', now)).toEqual({ free: true });
    expect(leaseState(lease(undefined, '2026-01-01T00:00:29Z'), 'me', now)).toEqual({ free: true });
    expect(leaseState(lease('me', '2026-01-01T00:00:29Z'), 'me', now)).toEqual({ free: true });
  });

  it('is held by another until its renewal plus its duration', () => {
    expect(leaseState(lease('other', '2026-01-01T00:00:10Z'), 'me', now)).toEqual({
      free: false,
      holder: 'other',
      until: at('2026-01-01T00:00:40Z'),
    });
  });

  it('is free once a dead holder stopped renewing for longer than the duration', () => {
    expect(leaseState(lease('dead', '2026-01-01T00:00:00Z'), 'me', now)).toEqual({ free: true });
    expect(leaseState(lease('dead', '2026-01-01T00:00:00Z', 31), 'me', now).free).toBe(false);
  });
});

test('backoff doubles from the base, is capped, and jitters within ±20%', () => {
  const policy = { attempts: 5, baseDelayMs: 1000, maxDelayMs: 3000 };
  expect(backoffDelayMs(policy, 2, () => 0.5)).toBe(1000);
  expect(backoffDelayMs(policy, 3, () => 0.5)).toBe(2000);
  expect(backoffDelayMs(policy, 4, () => 0.5)).toBe(3000);
  expect(backoffDelayMs(policy, 9, () => 0.5)).toBe(3000);
  expect(backoffDelayMs(policy, 2, () => 0)).toBe(800);
  expect(backoffDelayMs(policy, 2, () => 0.999999)).toBe(1200);
  expect(defaultRetryPolicy.attempts).toBe(3);
});

test('host faults are retried; host-key and authentication refusals never are', () => {
  const result = (reason?: string) => ({
    exitCode: reason ? 100 : 0,
    ...(reason ? { error: { reason: reason as never, message: reason } } : {}),
    stdoutTail: [],
    stderrTail: [],
    durationMs: 1,
  });
  expect(isRetryable(result())).toBe(false);
  for (const reason of [
    'CommandFailed',
    'ConnectFailed',
    'ConnectTimeout',
    'CommandTimeout',
    'SessionClosed',
  ])
    expect(isRetryable(result(reason))).toBe(true);
  for (const reason of ['HostKeyChanged', 'HostKeyUnknown', 'HostKeyRevoked', 'AuthenticationFailed'])
    expect(isRetryable(result(reason))).toBe(false);
});

test('Lease times go out with the six fractional digits the API server parses', () => {
  expect(String(microTime(at('2026-12-01T08:28:16.564Z')))).toBe('2026-12-01T08:28:16.564000Z');
});
