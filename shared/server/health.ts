/**
 * The health probes: liveness is 200 while the process serves at all; readiness turns 503
 * once the server drains (after close() or SIGTERM), so Knative stops sending before it exits.
 */
export type HealthProbe = (draining: boolean) => { status: number; body: { status: string } };

export const healthProbes: Readonly<Record<string, HealthProbe>> = {
  '/health/liveness': () => ({ status: 200, body: { status: 'alive' } }),
  '/health/readiness': (draining) =>
    draining ? { status: 503, body: { status: 'draining' } } : { status: 200, body: { status: 'ready' } },
};
