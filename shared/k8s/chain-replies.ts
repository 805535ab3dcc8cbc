import type { CloudEvent } from 'cloudevents';
import { z } from 'zod';
import { chainEvent } from '../cloudevents/chain-event.js';
import { clusterTypeOf } from '../core/cluster-type.js';
import { sha256Hex } from '../core/hash.js';
import { inventoryConfigMapName, inventoryKey } from '../core/names.js';
import { EventTypes, provisioningSubject } from '../events/types.js';
import { resolvedNodeSchema } from '../schemas/node.js';
import { provisioningSchema } from '../schemas/provisioning.js';
import type { KubeClients } from './clients.js';
import { readConfigMap } from './config-maps.js';
import { clusterOf, provisioningRef } from './provisioning.js';
import type { StoredObject } from './stored-object.js';

/**
 * A done step's reply, rebuilt from what the API holds (never from an event): for the sweep,
 * which re-drives the next step, and for a redelivered event, which gets the reply it got the
 * first time (shared/k8s/step-causes.ts). `id`: the reply's id (default a fresh one).
 */

const statusNodesSchema = z.array(resolvedNodeSchema).min(1);

/** hosts.resolved from the recorded status.nodes (undefined when they are not usable). */
export function hostsResolvedAgain(
  functionName: string,
  item: StoredObject,
  id?: string,
): CloudEvent<unknown> | undefined {
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
    { cluster, ...(id ? { id } : {}) },
  );
}

/** inventory.rendered from the stored inventory ConfigMap (undefined when it is missing). */
export async function inventoryRenderedAgain(
  functionName: string,
  clients: KubeClients,
  item: StoredObject,
  id?: string,
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
    { cluster, ...(id ? { id } : {}) },
  );
}
