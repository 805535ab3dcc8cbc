import type { CloudEvent } from 'cloudevents';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { hostsResolvedAgain, inventoryRenderedAgain } from '../../shared/k8s/chain-replies.js';
import { conditionsOf } from '../../shared/k8s/conditions.js';
import { runSweep } from '../../shared/k8s/sweep.js';
import { provisioningsResource } from '../../shared/k8s/resources.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import type { FunctionContext } from '../../shared/server/types.js';
import { clusterFactsFor, type ClusterFacts } from './cluster-facts.js';
import type { HostLookupConfig } from './config.js';
import { nextStep } from './next-step.js';
import { resolveProvisioning } from './resolve-provisioning.js';

/**
 * The sweep's part here: every Provisioning that is not Ready for its generation (and not in
 * progress, nor being deleted) gets the event of its next step (nextStep) sent to the broker again.
 */
export async function sweep(context: FunctionContext<HostLookupConfig>): Promise<void> {
  const facts = clusterFactsFor(context);
  await runSweep(context, {
    resource: provisioningsResource,
    kind: 'Provisioning',
    // Being deleted: kud-job-launch's sweep cleans up and releases its hosts; resolving it again
    // would claim them back (and the deletion bumps its generation, so every step looks undone).
    select: (item) => item.metadata.deletionTimestamp === undefined,
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

/**
 * The resume's re-drive (shared/k8s/paused.ts): a Provisioning paused between two steps gets the
 * next step's event as soon as the annotation is removed, not at the next sweep. Resolving is
 * left to the handler that resumed it (it goes on as for any update event), and the cleanup of a
 * deleted one to kud-job-launch's sweep.
 */
export const resumeChain =
  (context: FunctionContext<HostLookupConfig>, clients: KubeClients) =>
  (item: StoredObject): Promise<CloudEvent<unknown> | undefined> => {
    // Being deleted: kud-job-launch's sweep goes on with the cleanup; nothing is re-driven.
    if (item.metadata.deletionTimestamp !== undefined) return Promise.resolve(undefined);
    const step = nextStep(conditionsOf(item), item.metadata.generation ?? 0);
    if (step !== 'render' && step !== 'launch') return Promise.resolve(undefined);
    return redrive(context, clients, clusterFactsFor(context), item);
  };
