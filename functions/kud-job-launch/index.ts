import { functionsJobsWatch } from './existing-job.js';
import { installerSettingsWatch } from './installer-settings.js';
import {
  EventTypes,
  SourceEventTypes,
  inventoryRenderedDataSchema,
  kubeObjectSchema,
  type InventoryRenderedData,
  type KubeObjectData,
} from '../../shared/events/types.js';
import { kubeClients } from '../../shared/k8s/clients.js';
import { functionName } from './name.js';
import { provisioningsResource } from '../../shared/k8s/resources.js';
import { customResourceWatch } from '../../shared/k8s/watched-objects.js';
import { funcHandle } from '../../shared/server/func-adapter.js';
import { on, type FunctionContext, type FunctionDefinition } from '../../shared/server/types.js';
import { kudJobLaunchConfigSchema, type KudJobLaunchConfig } from './config.js';
import { onJobUpdate } from './job-update.js';
import { launchJob } from './launch-job.js';
import { ProvisioningCondition, provisioningPointer } from '../../shared/k8s/provisioning.js';
import { defineStep } from '../../shared/k8s/define-step.js';
import { sweepOnPing } from '../../shared/k8s/sweep.js';
import { kudJobLaunchMetrics } from './metrics.js';
import { sweep } from './sweep.js';

/**
 * kud-job-launch: inventory.rendered → the KUD installer Job; Job updates → cluster.ready or
 * provisioning.failed; the ping finishes Jobs whose completion event was missed. The launch's
 * prologue is the shared step's (shared/k8s/define-step.ts); a launched Job is never announced
 * twice (no reply again: the Job's own events drive what follows).
 */
const onInventoryRendered = defineStep<KudJobLaunchConfig, InventoryRenderedData>({
  condition: ProvisioningCondition.jobLaunched,
  read: (data, _context, event) => provisioningPointer(data.provisioning, event),
  deleting: 'skip',
  run: (run, live) => launchJob(run, live),
});

const onJobChange = (context: FunctionContext<KudJobLaunchConfig>, object: KubeObjectData) =>
  onJobUpdate(context, kubeClients(context.kubeConfig), object);

export const definition: FunctionDefinition<KudJobLaunchConfig> = {
  name: functionName,
  events: {
    [EventTypes.inventoryRendered]: on(inventoryRenderedDataSchema, onInventoryRendered),
    [SourceEventTypes.resourceUpdate]: on(kubeObjectSchema, onJobChange),
    [SourceEventTypes.ping]: sweepOnPing(sweep),
  },
  configSchema: kudJobLaunchConfigSchema,
  metrics: kudJobLaunchMetrics,
  // The Provisioning an event points at, the installer settings and the KUD Jobs, from the
  // server's watches (shared/k8s/watched-objects.ts).
  watches: (config) => [
    customResourceWatch(provisioningsResource),
    installerSettingsWatch(config.FUNCTIONS_NAMESPACE),
    functionsJobsWatch(config.FUNCTIONS_NAMESPACE),
  ],
};

/** The func convention's entry point (faas-js-runtime): see shared/server/func-adapter.ts. */
export const handle = funcHandle(definition);
