import type { CloudEvent } from 'cloudevents';
import {
  EventTypes,
  SourceEventTypes,
  inventoryRenderedDataSchema,
  kubeObjectSchema,
  pingDataSchema,
} from '../../shared/events/types.js';
import { kubeClients } from '../../shared/k8s/clients.js';
import { funcHandle } from '../../shared/server/func-adapter.js';
import type { FunctionContext, FunctionDefinition, HandlerResult } from '../../shared/server/types.js';
import { functionName } from './complete-job.js';
import { kudJobLaunchConfigSchema, type KudJobLaunchConfig } from './config.js';
import { onJobUpdate } from './job-update.js';
import { launchJob } from './launch-job.js';
import { ProvisioningCondition, provisioningTarget } from '../../shared/k8s/provisioning.js';
import { withRetryingCondition } from '../../shared/k8s/retrying-condition.js';
import { kudJobLaunchMetrics } from './metrics.js';
import { sweep } from './sweep.js';

/**
 * kud-job-launch: inventory.rendered → the KUD installer Job; Job updates → cluster.ready or
 * provisioning.failed; the ping finishes Jobs whose completion event was missed.
 */
async function handleEvent(
  context: FunctionContext<KudJobLaunchConfig>,
  event: CloudEvent<unknown>,
): Promise<HandlerResult> {
  const clients = kubeClients(context.kubeConfig);
  switch (event.type) {
    case EventTypes.inventoryRendered: {
      const data = inventoryRenderedDataSchema.parse(event.data);
      const ref = data.provisioning;
      return withRetryingCondition(
        clients,
        provisioningTarget(ref.namespace, ref.name),
        ref,
        ProvisioningCondition.jobLaunched,
        context.log,
        () => launchJob(context, clients, data),
      );
    }
    case SourceEventTypes.resourceUpdate:
      return onJobUpdate(context, clients, kubeObjectSchema.parse(event.data));
    default:
      await sweep(context);
      return undefined;
  }
}

export const definition: FunctionDefinition<KudJobLaunchConfig> = {
  name: functionName,
  accepts: {
    [EventTypes.inventoryRendered]: inventoryRenderedDataSchema,
    [SourceEventTypes.resourceUpdate]: kubeObjectSchema,
    [SourceEventTypes.ping]: pingDataSchema,
  },
  configSchema: kudJobLaunchConfigSchema,
  handle: handleEvent,
  metrics: kudJobLaunchMetrics,
};

/** The func convention's entry point (faas-js-runtime): see shared/server/func-adapter.ts. */
export const handle = funcHandle(definition);
