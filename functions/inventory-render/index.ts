import type { CloudEvent } from 'cloudevents';
import { z } from 'zod';
import { inventoryConfigMapName } from '../../shared/core/names.js';
import { BpaError } from '../../shared/errors.js';
import { EventTypes, hostsResolvedDataSchema, type HostsResolvedData } from '../../shared/events/types.js';
import { Reason } from '../../shared/reasons.js';
import { resolvedNodeSchema } from '../../shared/schemas/node.js';
import { provisioningSchema } from '../../shared/schemas/provisioning.js';
import { kubeClients, type KubeClients } from '../../shared/k8s/clients.js';
import { isCurrent } from '../../shared/k8s/condition-writer.js';
import { conditionsOf, isTrueFor } from '../../shared/k8s/conditions.js';
import { upsertConfigMap } from '../../shared/k8s/config-maps.js';
import { withRetryingCondition } from '../../shared/k8s/retrying-condition.js';
import {
  ProvisioningCondition,
  completeProvisioningStep,
  failProvisioning,
  provisioningTarget,
  readProvisioning,
} from '../../shared/k8s/provisioning.js';
import { funcHandle } from '../../shared/server/func-adapter.js';
import type { FunctionContext, FunctionDefinition, HandlerResult } from '../../shared/server/types.js';
import { inventoryRenderConfigSchema, type InventoryRenderConfig } from './config.js';
import { inventoriesRendered, inventoryRenderMetrics } from './metrics.js';
import { renderInventory } from './render-inventory.js';

export const functionName = 'inventory-render';
const statusNodesSchema = z.array(resolvedNodeSchema).min(1);

/**
 * inventory-render: hosts.resolved → hosts.ini in the `<cluster>-inventory` ConfigMap,
 * InventoryRendered True, reply inventory.rendered. A duplicate or an event about another
 * generation of the Provisioning ends here with no reply (204).
 */
async function handleEvent(
  context: FunctionContext<InventoryRenderConfig>,
  event: CloudEvent<unknown>,
): Promise<HandlerResult> {
  const data: HostsResolvedData = hostsResolvedDataSchema.parse(event.data);
  const ref = data.provisioning;
  const clients = kubeClients(context.kubeConfig);
  return withRetryingCondition(
    clients,
    provisioningTarget(ref.namespace, ref.name),
    ref,
    ProvisioningCondition.inventoryRendered,
    context.log,
    () => render(context, clients, data),
  );
}

async function render(
  context: FunctionContext<InventoryRenderConfig>,
  clients: KubeClients,
  data: HostsResolvedData,
): Promise<HandlerResult> {
  const ref = data.provisioning;
  const live = await readProvisioning(clients, ref.namespace, ref.name);
  if (!live || !isCurrent(live, ref)) {
    context.log.info('event is about another generation or a deleted Provisioning; ignored', {
      generation: ref.generation,
      liveGeneration: live?.metadata.generation,
    });
    return undefined;
  }
  const step = ProvisioningCondition.inventoryRendered;
  const conditions = conditionsOf(live);
  if (isTrueFor(conditions, step, ref.generation)) {
    context.log.debug('inventory already rendered for this generation');
    return undefined;
  }
  const provisioning = provisioningSchema.safeParse(live);
  if (!provisioning.success) {
    context.log.info('Provisioning is not valid any more; host-lookup reports it');
    return undefined;
  }
  // The recorded nodes are authoritative once HostsResolved is True for this generation.
  const recorded = statusNodesSchema.safeParse(live.status?.nodes);
  const nodes =
    isTrueFor(conditions, ProvisioningCondition.hostsResolved, ref.generation) && recorded.success
      ? recorded.data
      : data.nodes;

  let rendered;
  try {
    rendered = renderInventory(provisioning.data, data.clusterType, nodes);
  } catch (error) {
    if (!(error instanceof BpaError) || (error.kind !== 'invalid' && error.kind !== 'resolution'))
      throw error;
    return failProvisioning(
      clients,
      functionName,
      live,
      { step, reason: error.reason, message: error.message },
      context.log,
    );
  }
  const configMap = inventoryConfigMapName(data.cluster);
  const upsert = await upsertConfigMap(clients, rendered.configMap);
  const event = await completeProvisioningStep(
    clients,
    functionName,
    live,
    {
      step,
      reason: Reason.InventoryRendered,
      message: `Inventory rendered into ConfigMap ${configMap} (sha256 ${rendered.inventorySha256})`,
      ready: {
        status: 'Unknown',
        reason: Reason.Provisioning,
        message: 'Inventory rendered; launching the KUD Job',
      },
      announce: {
        type: EventTypes.inventoryRendered,
        cluster: data.cluster,
        data: {
          provisioning: ref,
          cluster: data.cluster,
          clusterType: data.clusterType,
          configMap,
          inventorySha256: rendered.inventorySha256,
        },
      },
    },
    context.log,
  );
  context.log.info('inventory rendered', { configMap, upsert, recorded: event !== undefined });
  if (event) context.metrics?.counter(inventoriesRendered).inc();
  return event;
}

export const definition: FunctionDefinition<InventoryRenderConfig> = {
  name: functionName,
  accepts: { [EventTypes.hostsResolved]: hostsResolvedDataSchema },
  configSchema: inventoryRenderConfigSchema,
  handle: handleEvent,
  metrics: inventoryRenderMetrics,
};

/** The func convention's entry point (faas-js-runtime): see shared/server/func-adapter.ts. */
export const handle = funcHandle(definition);
