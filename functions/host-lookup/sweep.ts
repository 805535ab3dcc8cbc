import type { CloudEvent } from 'cloudevents';
import { z } from 'zod';
import { chainEvent } from '../../shared/cloudevents/chain-event.js';
import { clusterTypeOf } from '../../shared/core/cluster-type.js';
import { sha256Hex } from '../../shared/core/hash.js';
import { inventoryConfigMapName, inventoryKey } from '../../shared/core/names.js';
import { EventTypes, provisioningSubject } from '../../shared/events/types.js';
import { resolvedNodeSchema } from '../../shared/schemas/node.js';
import { provisioningSchema } from '../../shared/schemas/provisioning.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { conditionsOf } from '../../shared/k8s/conditions.js';
import { readConfigMap } from '../../shared/k8s/config-maps.js';
import { runSweep } from '../../shared/k8s/sweep.js';
import { clusterOf, provisioningRef } from '../../shared/k8s/provisioning.js';
import { provisioningsResource } from '../../shared/k8s/resources.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import type { FunctionContext } from '../../shared/server/types.js';
import { clusterFactsFor, type ClusterFacts } from './cluster-facts.js';
import type { HostLookupConfig } from './config.js';
import { nextStep } from './next-step.js';
import { resolveProvisioning } from './resolve-provisioning.js';

const statusNodesSchema = z.array(resolvedNodeSchema).min(1);

/**
 * The sweep's part here: every Provisioning that is not Ready for its generation (and not in
 * progress) gets the event of its next step (nextStep) sent to the broker again.
 */
export async function sweep(context: FunctionContext<HostLookupConfig>): Promise<void> {
  const facts = clusterFactsFor(context);
  await runSweep(context, {
    resource: provisioningsResource,
    kind: 'Provisioning',
    redrive: (item, clients) => redrive(context, clients, facts, item),
  });
}

async function redrive(
  context: FunctionContext<HostLookupConfig>,
  clients: KubeClients,
  facts: ClusterFacts,
  item: StoredObject,
): Promise<CloudEvent<unknown> | undefined> {
  const step = nextStep(conditionsOf(item), item.metadata.generation ?? 0);
  if (step === 'none') return undefined;
  context.log.info('sweep re-drives a Provisioning', {
    provisioning: `${item.metadata.namespace}/${item.metadata.name}`,
    step,
  });
  if (step === 'launch') {
    const event = await inventoryRenderedAgain(context.functionName, clients, item);
    if (event) return event;
  }
  if (step !== 'resolve') {
    const event = hostsResolvedAgain(context.functionName, item);
    if (event) return event;
  }
  const outcome = await resolveProvisioning(context, clients, facts, item);
  return outcome.kind === 'skipped' ? undefined : outcome.event;
}

/** hosts.resolved from the recorded status.nodes (undefined when they are not usable). */
function hostsResolvedAgain(functionName: string, item: StoredObject): CloudEvent<unknown> | undefined {
  const nodes = statusNodesSchema.safeParse(item.status?.nodes);
  const provisioning = provisioningSchema.safeParse(item);
  if (!nodes.success || !provisioning.success) return undefined;
  const ref = provisioningRef(item);
  const cluster = clusterOf(item);
  return chainEvent(
    EventTypes.hostsResolved,
    functionName,
    provisioningSubject(ref.namespace, ref.name),
    { provisioning: ref, cluster, clusterType: clusterTypeOf(provisioning.data), nodes: nodes.data },
    { cluster },
  );
}

/** inventory.rendered from the stored inventory ConfigMap (undefined when it is missing). */
async function inventoryRenderedAgain(
  functionName: string,
  clients: KubeClients,
  item: StoredObject,
): Promise<CloudEvent<unknown> | undefined> {
  const provisioning = provisioningSchema.safeParse(item);
  if (!provisioning.success) return undefined;
  const ref = provisioningRef(item);
  const cluster = clusterOf(item);
  const configMap = inventoryConfigMapName(cluster);
  const inventory = (await readConfigMap(clients, ref.namespace, configMap))?.data?.[inventoryKey];
  if (inventory === undefined) return undefined;
  return chainEvent(
    EventTypes.inventoryRendered,
    functionName,
    provisioningSubject(ref.namespace, ref.name),
    {
      provisioning: ref,
      cluster,
      clusterType: clusterTypeOf(provisioning.data),
      configMap,
      inventorySha256: sha256Hex(inventory),
    },
    { cluster },
  );
}
