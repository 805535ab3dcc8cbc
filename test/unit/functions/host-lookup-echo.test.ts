import { CloudEvent } from 'cloudevents';
import { definition } from '../../../functions/host-lookup/index.js';
import type { HostLookupConfig } from '../../../functions/host-lookup/config.js';
import { SourceEventTypes } from '../../../shared/events/types.js';
import { silentLogger } from '../../../shared/log.js';
import type { FunctionContext } from '../../../shared/server/types.js';
import { untouchableKubeConfig } from '../server/test-function.js';

// issue 26: the echo of the chain's own status write (an update event whose object shows this
// generation handled) is skipped from the event's data, before any client is made; anything
// else reaches the API. The KubeConfig throws on any use, so "skipped" means "touched nothing".
const context = {
  functionName: 'host-lookup',
  log: silentLogger,
  kubeConfig: untouchableKubeConfig,
  config: {} as HostLookupConfig,
  send: () => Promise.resolve(),
} satisfies FunctionContext<HostLookupConfig>;

const handler = definition.events[SourceEventTypes.resourceUpdate];
const condition = (type: string, status: string, observedGeneration = 3) => ({
  type,
  status,
  reason: 'HostsResolved',
  message: 'm',
  lastTransitionTime: '2026-01-01T00:00:00Z',
  observedGeneration,
});
const provisioning = (status: Record<string, unknown>, annotations: Record<string, string> = {}) => ({
  apiVersion: 'bpa.akraino.org/v1alpha1',
  kind: 'Provisioning',
  metadata: {
    name: 'p',
    namespace: 'ns',
    uid: 'u',
    generation: 3,
    labels: { cluster: 'c' },
    annotations,
  },
  status: { observedLabels: { cluster: 'c' }, ...status },
});
const handle = (object: unknown) =>
  handler!.handle(
    context,
    // As the server hands it over: parsed by the handler's own schema.
    handler!.data.parse(object) as never,
    new CloudEvent({ type: SourceEventTypes.resourceUpdate, source: '/apiserver', data: object }),
  );

describe('host-lookup on its own echoes', () => {
  it('skips an update whose object shows HostsResolved recorded for its generation, touching nothing', async () => {
    await expect(handle(provisioning({ conditions: [condition('HostsResolved', 'True')] }))).resolves.toBe(
      undefined,
    );
    await expect(handle(provisioning({ conditions: [condition('HostsResolved', 'False')] }))).resolves.toBe(
      undefined,
    );
  });

  it('reads the API when the hint is not enough: not handled, a fault being retried, an older generation, a pause to record', async () => {
    const acting = [
      provisioning({}),
      provisioning({ conditions: [condition('HostsResolved', 'Unknown')] }),
      provisioning({ conditions: [condition('HostsResolved', 'True', 2)] }),
      provisioning({ conditions: [condition('HostsResolved', 'True')] }, { 'bpa.akraino.org/paused': '' }),
      provisioning({ conditions: [condition('HostsResolved', 'True')], observedLabels: { cluster: 'old' } }),
    ];
    for (const object of acting) await expect(handle(object)).rejects.toThrow(/touched the KubeConfig/);
  });
});
