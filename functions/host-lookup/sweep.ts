import type { CloudEvent } from 'cloudevents';
import { z } from 'zod';
import { chainEvent } from '../../shared/cloudevents/chain-event.js';
import { clusterTypeOf } from '../../shared/core/cluster-type.js';
import { sha256Hex } from '../../shared/core/hash.js';
import { inventoryConfigMapName, inventoryKey } from '../../shared/core/names.js';
import { describeError, transient } from '../../shared/errors.js';
import { EventTypes, provisioningSubject } from '../../shared/events/types.js';
import { resolvedNodeSchema } from '../../shared/schemas/node.js';
import { provisioningSchema } from '../../shared/schemas/provisioning.js';
import { kubeClients, type KubeClients } from '../../shared/k8s/clients.js';
import { conditionsOf } from '../../shared/k8s/conditions.js';
import { readConfigMap } from '../../shared/k8s/config-maps.js';
import { listInNamespaces } from '../../shared/k8s/custom-objects.js';
import { clusterOf, provisioningRef } from '../../shared/k8s/provisioning.js';
import { provisioningsResource } from '../../shared/k8s/resources.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import type { FunctionContext } from '../../shared/server/types.js';
import { ClusterFacts } from './cluster-facts.js';
import type { HostLookupConfig } from './config.js';
import { nextStep } from './next-step.js';
import { functionName, resolveProvisioning } from './resolve-provisioning.js';

const statusNodesSchema = z.array(resolvedNodeSchema).min(1);

/**
 * The periodic sweep: the source drops events and never replays, so every Provisioning that is
 * not Ready for its generation (and not in progress) gets the event of its next step sent to
 * the broker again. Handlers are idempotent, so a re-drive that races the original is harmless.
 * One Provisioning failing does not stop the others; the ping is failed (retried) at the end.
 */
export async function sweep(context: FunctionContext<HostLookupConfig>): Promise<void> {
  const clients = kubeClients(context.kubeConfig);
  const facts = new ClusterFacts(clients, context.config, context.log);
  const items = await listInNamespaces(clients, provisioningsResource, context.config.SWEEP_NAMESPACES);
  const failed: string[] = [];
  let sent = 0;
  for (const item of items) {
    const where = `${item.metadata.namespace}/${item.metadata.name}`;
    try {
      const event = await redrive(context, clients, facts, item);
      if (!event) continue;
      // send() is typed for CloudEvent<undefined>; the data is JSON either way.
      await context.send(event as CloudEvent);
      sent++;
    } catch (error) {
      failed.push(where);
      context.log.warn('sweep could not re-drive a Provisioning', {
        provisioning: where,
        error: describeError(error).message,
      });
    }
  }
  context.log.info('sweep done', { provisionings: items.length, sent, failed: failed.length });
  if (failed.length > 0)
    throw transient(
      'SweepIncomplete',
      `The sweep could not re-drive ${failed.length} Provisioning(s): ${failed.join(', ')}`,
    );
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
    const event = await inventoryRenderedAgain(clients, item);
    if (event) return event;
  }
  if (step !== 'resolve') {
    const event = hostsResolvedAgain(item);
    if (event) return event;
  }
  const outcome = await resolveProvisioning(context, clients, facts, item);
  return outcome.kind === 'skipped' ? undefined : outcome.event;
}

/** hosts.resolved from the recorded status.nodes (undefined when they are not usable). */
function hostsResolvedAgain(item: StoredObject): CloudEvent<unknown> | undefined {
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
