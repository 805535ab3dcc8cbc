import { z } from 'zod';
import { clusterTypeOf } from '../../shared/core/cluster-type.js';
import { inventoryConfigMapName } from '../../shared/core/names.js';
import { markManaged } from '../../shared/core/ownership.js';
import { ownerOf } from '../../shared/core/render.js';
import { BpaError } from '../../shared/errors.js';
import { EventTypes, hostsResolvedDataSchema, type HostsResolvedData } from '../../shared/events/types.js';
import { Reason, errorReason } from '../../shared/reasons.js';
import { resolvedNodeSchema } from '../../shared/schemas/node.js';
import { provisioningSchema } from '../../shared/schemas/provisioning.js';
import { inventoryRenderedAgain } from '../../shared/k8s/chain-replies.js';
import { defineStep, type StepRun } from '../../shared/k8s/define-step.js';
import { conditionsOf, isTrueFor } from '../../shared/k8s/conditions.js';
import { upsertConfigMap } from '../../shared/k8s/config-maps.js';
import { fieldManagerFor } from '../../shared/k8s/status-apply.js';
import { ownershipOf, recordOwned } from '../../shared/k8s/owned-objects.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import {
  ProvisioningCondition,
  provisioningPointer,
  completeProvisioningStep,
  failProvisioning,
  provisioningTarget,
} from '../../shared/k8s/provisioning.js';
import { funcHandle } from '../../shared/server/func-adapter.js';
import { on, type FunctionDefinition, type HandlerResult } from '../../shared/server/types.js';
import { inventoryRenderConfigSchema, type InventoryRenderConfig } from './config.js';
import { inventoriesRendered, inventoryRenderMetrics } from './metrics.js';
import { renderInventory } from './render-inventory.js';

const statusNodesSchema = z.array(resolvedNodeSchema).min(1);

/**
 * inventory-render: hosts.resolved → hosts.ini in the `<cluster>-inventory` ConfigMap,
 * InventoryRendered True, reply inventory.rendered. The event that rendered it, delivered again,
 * gets the same reply; another duplicate or an event about another generation of the
 * Provisioning ends here with no reply (204). The prologue is the shared step's (define-step.ts).
 */
const onHostsResolved = defineStep<InventoryRenderConfig, HostsResolvedData>({
  condition: ProvisioningCondition.inventoryRendered,
  read: (data) => provisioningPointer(data.provisioning),
  deleting: 'act',
  replyAgain: ({ context, clients }, live, id) =>
    inventoryRenderedAgain(context.functionName, clients, live, id),
  run: render,
});

async function render(
  { context, clients, cause }: StepRun<InventoryRenderConfig>,
  live: StoredObject,
  data: HostsResolvedData,
): Promise<HandlerResult> {
  const ref = data.provisioning;
  const step = ProvisioningCondition.inventoryRendered;
  const conditions = conditionsOf(live);
  const provisioning = provisioningSchema.safeParse(live);
  if (!provisioning.success) {
    context.log.info('Provisioning is not valid any more; host-lookup reports it');
    return undefined;
  }
  const recorded = statusNodesSchema.safeParse(live.status?.nodes);
  if (!isTrueFor(conditions, ProvisioningCondition.hostsResolved, ref.generation) || !recorded.success) {
    context.log.info('hosts are not resolved for this generation; the event is not taken as a fact');
    return undefined;
  }
  const cluster = provisioning.data.metadata.labels.cluster;
  const clusterType = clusterTypeOf(provisioning.data);
  if (data.cluster !== cluster || data.clusterType !== clusterType)
    context.log.info('event disagrees with the Provisioning; the Provisioning is used', {
      eventCluster: data.cluster,
      cluster,
    });

  const configMap = inventoryConfigMapName(cluster);
  // The object the status is applied on: the read, or what recording the ConfigMap's uid stored
  // (undefined: the Provisioning is gone).
  let base: StoredObject | undefined;
  let rendered;
  try {
    rendered = renderInventory(provisioning.data, clusterType, recorded.data);
    // The tenant's copy, to read (contract section 4); never mounted: kud-job-launch renders the
    // inventory again at launch into the functions' namespace (section 12). Ours only when its uid
    // is recorded in status.ownedObjects: a look-alike with forged labels is ObjectConflict.
    const owner = ownerOf(provisioning.data);
    const written = await upsertConfigMap(clients, markManaged(rendered.configMap), ownershipOf(owner, live));
    base = await recordOwned(
      clients,
      provisioningTarget(ref.namespace, ref.name),
      fieldManagerFor(context.functionName),
      owner.uid,
      [{ kind: 'ConfigMap', metadata: written.configMap.metadata }],
      live,
    );
  } catch (error) {
    // Spec errors, and a <cluster>-inventory the functions did not create (ObjectConflict).
    if (!(error instanceof BpaError) || (error.kind !== 'invalid' && error.kind !== 'resolution'))
      throw error;
    return failProvisioning(
      clients,
      context.functionName,
      live,
      { step, reason: errorReason(error), message: error.message },
      context.log,
      { apply: true },
    );
  }
  if (!base) return undefined;
  // Server-side apply by bpa-inventory-render (shared/k8s/status-apply.ts): its condition, Ready,
  // its step cause; no read beyond the prologue's (and recordOwned's write, when it wrote).
  const event = await completeProvisioningStep(
    clients,
    context.functionName,
    base,
    {
      step,
      reason: Reason.InventoryRendered,
      message: `Inventory rendered into ConfigMap ${configMap} (sha256 ${rendered.inventorySha256})`,
      ready: {
        status: 'Unknown',
        reason: Reason.Provisioning,
        message: 'Inventory rendered; launching the KUD Job',
      },
      cause,
      announce: {
        type: EventTypes.inventoryRendered,
        cluster,
        data: {
          provisioning: ref,
          cluster,
          clusterType,
          configMap,
          inventorySha256: rendered.inventorySha256,
        },
      },
    },
    context.log,
    { apply: true },
  );
  context.log.info('inventory rendered', { configMap, recorded: event !== undefined });
  if (event) context.metrics?.counter(inventoriesRendered).inc();
  return event;
}

export const definition: FunctionDefinition<InventoryRenderConfig> = {
  name: 'inventory-render',
  events: { [EventTypes.hostsResolved]: on(hostsResolvedDataSchema, onHostsResolved) },
  configSchema: inventoryRenderConfigSchema,
  metrics: inventoryRenderMetrics,
};

/** The func convention's entry point (faas-js-runtime): see shared/server/func-adapter.ts. */
export const handle = funcHandle(definition);
