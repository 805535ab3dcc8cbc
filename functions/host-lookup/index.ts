import { describeError, invalid } from '../../shared/errors.js';
import { SourceEventTypes, kubeObjectSchema, type KubeObjectData } from '../../shared/events/types.js';
import { provisioningApiVersion, provisioningKind } from '../../shared/schemas/provisioning.js';
import { hostsResolvedAgain } from '../../shared/k8s/chain-replies.js';
import { conditionFor, conditionsOf } from '../../shared/k8s/conditions.js';
import { defineStep } from '../../shared/k8s/define-step.js';
import { sweepOnPing } from '../../shared/k8s/sweep.js';
import { awaitsPauseTransition } from '../../shared/k8s/paused.js';
import { ProvisioningCondition, provisioningTarget } from '../../shared/k8s/provisioning.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import { provisioningsResource } from '../../shared/k8s/resources.js';
import { customResourceWatch } from '../../shared/k8s/watched-objects.js';
import { funcHandle } from '../../shared/server/func-adapter.js';
import { on, type FunctionDefinition } from '../../shared/server/types.js';
import { clusterFactsFor } from './cluster-facts.js';
import { stopHostIndexes } from './host-watch.js';
import { hostLookupConfigSchema, type HostLookupConfig } from './config.js';
import { labelsWithEnding, recordHandling, rerunReason } from './lifecycle.js';
import { fieldManagerFor } from '../../shared/k8s/status-apply.js';
import { hostLookupMetrics } from './metrics.js';
import { resolveProvisioning } from './resolve-provisioning.js';
import { resumeChain, sweep } from './sweep.js';

/**
 * host-lookup: a Provisioning was added or changed → resolve its nodes' MACs to IPs and reply
 * `hosts.resolved` (or record the failure and reply `provisioning.failed`). The ping runs the
 * sweep. Everything is read live: the event only says which object to look at (the prologue is
 * the shared step's, shared/k8s/define-step.ts), and its data may only make the step skip work
 * (`echoOfHandled`, and `shown`: a version this step wrote itself), never act.
 */
const onProvisioningChange = defineStep<HostLookupConfig, KubeObjectData>({
  condition: ProvisioningCondition.hostsResolved,
  read: (object, context) => {
    if (object.kind !== provisioningKind || object.apiVersion !== provisioningApiVersion) {
      context.log.debug('not a Provisioning; ignored', { kind: object.kind, apiVersion: object.apiVersion });
      return undefined;
    }
    const namespace = object.metadata.namespace;
    if (!namespace)
      throw invalid('MissingNamespace', `Provisioning ${object.metadata.name} has no namespace in the event`);
    if (echoOfHandled(object)) {
      context.log.debug('the event shows this generation handled (an echo of a status write); skipped');
      return undefined;
    }
    const { uid, resourceVersion } = object.metadata;
    return {
      target: provisioningTarget(namespace, object.metadata.name),
      // The echoes of this step's own writes (the labels it recorded, the finalizer) end unread.
      ...(uid && resourceVersion ? { shown: { uid, resourceVersion } } : {}),
    };
  },
  deleting: 'skip-after-gate',
  // Status writes come back as update events: once this generation is handled (True or False;
  // Unknown is a transient fault being retried), stop here, unless the labels changed or a retry
  // was asked for (contract section 10).
  done: (live) => handledBy(live) !== undefined && !rerunReason(live),
  // The event that resolved the hosts, delivered again (its first reply went to a delivery that
  // timed out): the same reply, from status.nodes.
  replyAgain: ({ context }, live, id) =>
    handledBy(live)?.status === 'True' ? hostsResolvedAgain(context.functionName, live, id) : undefined,
  onResume: ({ context, clients }) => resumeChain(context, clients),
  run: async ({ context, clients, cause }, live) => {
    const rerun = rerunReason(live);
    if (rerun)
      context.log.info('re-running the chain for this generation', {
        generation: live.metadata.generation ?? 0,
        why: rerun,
      });
    const manager = fieldManagerFor(context.functionName);
    const withEnding = labelsWithEnding(live, rerun);
    const current = withEnding ? live : await recordHandling(clients, manager, live, rerun);
    if (!current) return undefined;
    try {
      const facts = clusterFactsFor(context);
      const outcome = await resolveProvisioning(context, clients, facts, current, cause, withEnding);
      return outcome.kind === 'skipped' ? undefined : outcome.event;
    } catch (error) {
      // A fault is an ending without a write of the step's own: the labels go first, as they
      // would have without the fold, and the prologue then records the fault.
      if (withEnding)
        await recordHandling(clients, manager, live, undefined).catch((writeError: unknown) =>
          context.log.warn('could not record the labels before the fault', describeError(writeError)),
        );
      throw error;
    }
  },
});

/** HostsResolved as recorded for the object's generation, unless Unknown (a fault being retried). */
function handledBy(object: StoredObject) {
  const handled = conditionFor(
    conditionsOf(object),
    ProvisioningCondition.hostsResolved,
    object.metadata.generation ?? 0,
  );
  return handled?.status === 'Unknown' ? undefined : handled;
}

/**
 * A hint from the event's data that may only skip work (issue 26): the object as the event shows
 * it has this generation handled, nothing to re-run and no pause or resume to record, so the
 * live object, as new or newer, needs nothing from this event either (a newer change comes with
 * its own event). The echoes of the chain's own status writes end here without a read.
 */
function echoOfHandled(object: KubeObjectData): boolean {
  const status = object.status;
  if (typeof status !== 'object' || status === null || Array.isArray(status)) return false;
  const shown: StoredObject = { ...object, status: status as Record<string, unknown> };
  if (awaitsPauseTransition(shown)) return false;
  if (shown.metadata.deletionTimestamp) return true;
  return handledBy(shown) !== undefined && !rerunReason(shown);
}

export const definition: FunctionDefinition<HostLookupConfig> = {
  name: 'host-lookup',
  events: {
    [SourceEventTypes.resourceAdd]: on(kubeObjectSchema, onProvisioningChange),
    [SourceEventTypes.resourceUpdate]: on(kubeObjectSchema, onProvisioningChange),
    [SourceEventTypes.ping]: sweepOnPing(sweep),
  },
  configSchema: hostLookupConfigSchema,
  metrics: hostLookupMetrics,
  release: stopHostIndexes,
  // The Provisioning an event points at, from the server's watch (shared/k8s/watched-objects.ts).
  watches: () => [customResourceWatch(provisioningsResource)],
};

/** The func convention's entry point (faas-js-runtime): see shared/server/func-adapter.ts. */
export const handle = funcHandle(definition);
