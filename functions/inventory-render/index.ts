import type { V1ObjectMeta } from '@kubernetes/client-node';
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
import { ownedObjectsFields, ownershipOf, recordOwned } from '../../shared/k8s/owned-objects.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import {
  ProvisioningCondition,
  provisioningPointer,
  completeProvisioningStep,
  failProvisioning,
  provisioningTarget,
} from '../../shared/k8s/provisioning.js';
import { provisioningsResource } from '../../shared/k8s/resources.js';
import { customResourceWatch } from '../../shared/k8s/watched-objects.js';
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
  read: (data, _context, event) => provisioningPointer(data.provisioning, event),
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
  const owner = ownerOf(provisioning.data);
  let rendered;
  // The ConfigMap as written: its uid goes into status.ownedObjects with the step's own apply.
  let owned: { kind: string; metadata: V1ObjectMeta | undefined }[];
  try {
    rendered = renderInventory(provisioning.data, clusterType, recorded.data);
    // The tenant's copy, to read (contract section 4); never mounted: kud-job-launch renders the
    // inventory again at launch into the functions' namespace (section 12). Ours only when its uid
    // is recorded in status.ownedObjects: a look-alike with forged labels is ObjectConflict.
    const written = await upsertConfigMap(clients, markManaged(rendered.configMap), ownershipOf(owner, live));
    owned = [{ kind: 'ConfigMap', metadata: written.configMap.metadata }];
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
  // Server-side apply by bpa-inventory-render (shared/k8s/status-apply.ts): its condition, Ready,
  // its step cause and the ConfigMap's uid, in one write on the prologue's read.
  const event = await completeProvisioningStep(
    clients,
    context.functionName,
    live,
    {
      fields: (fresh) => ownedObjectsFields(fresh, owner.uid, owned) ?? {},
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
  // Not recorded here (another delivery of the step recorded it, or the Provisioning moved on):
  // the uid of the ConfigMap written here is recorded all the same.
  if (!event)
    await recordOwned(
      clients,
      provisioningTarget(ref.namespace, ref.name),
      fieldManagerFor(context.functionName),
      owner.uid,
      owned,
      live,
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
  // The Provisioning an event points at, from the server's watch (shared/k8s/watched-objects.ts).
  watches: () => [customResourceWatch(provisioningsResource)],
};

/** The func convention's entry point (faas-js-runtime): see shared/server/func-adapter.ts. */
export const handle = funcHandle(definition);
