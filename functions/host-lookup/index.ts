import { invalid } from '../../shared/errors.js';
import {
  SourceEventTypes,
  kubeObjectSchema,
  pingDataSchema,
  type KubeObjectData,
} from '../../shared/events/types.js';
import { provisioningApiVersion, provisioningKind } from '../../shared/schemas/provisioning.js';
import type { CloudEvent } from 'cloudevents';
import { hostsResolvedAgain } from '../../shared/k8s/chain-replies.js';
import { kubeClients } from '../../shared/k8s/clients.js';
import { conditionFor, conditionsOf } from '../../shared/k8s/conditions.js';
import {
  ProvisioningCondition,
  provisioningTarget,
  readProvisioning,
} from '../../shared/k8s/provisioning.js';
import { pauseGate } from '../../shared/k8s/paused.js';
import { withRetryingCondition } from '../../shared/k8s/retrying-condition.js';
import { causeOf, recordedBy, replyIdFor } from '../../shared/k8s/step-causes.js';
import { funcHandle } from '../../shared/server/func-adapter.js';
import {
  on,
  type FunctionContext,
  type FunctionDefinition,
  type HandlerResult,
} from '../../shared/server/types.js';
import { clusterFactsFor } from './cluster-facts.js';
import { stopHostIndexes } from './host-watch.js';
import { hostLookupConfigSchema, type HostLookupConfig } from './config.js';
import { recordHandling, rerunReason } from './lifecycle.js';
import { hostLookupMetrics } from './metrics.js';
import { resolveProvisioning } from './resolve-provisioning.js';
import { resumeChain, sweep } from './sweep.js';

/**
 * host-lookup: a Provisioning was added or changed → resolve its nodes' MACs to IPs and reply
 * `hosts.resolved` (or record the failure and reply `provisioning.failed`). The ping runs the
 * sweep. Everything is read live: the event only says which object to look at.
 */
async function onProvisioningChange(
  context: FunctionContext<HostLookupConfig>,
  object: KubeObjectData,
  event: CloudEvent<unknown>,
): Promise<HandlerResult> {
  if (object.kind !== provisioningKind || object.apiVersion !== provisioningApiVersion) {
    context.log.debug('not a Provisioning; ignored', { kind: object.kind, apiVersion: object.apiVersion });
    return undefined;
  }
  const namespace = object.metadata.namespace;
  if (!namespace)
    throw invalid('MissingNamespace', `Provisioning ${object.metadata.name} has no namespace in the event`);

  const clients = kubeClients(context.kubeConfig);
  const live = await readProvisioning(clients, namespace, object.metadata.name);
  if (!live) {
    context.log.info('Provisioning is gone; event is stale');
    return undefined;
  }
  const gate = await pauseGate(clients, live, {
    component: context.functionName,
    log: context.log,
    onResume: resumeChain(context, clients),
  });
  if (gate.stop) return gate.reply;
  if (live.metadata.deletionTimestamp) {
    context.log.debug('Provisioning is being deleted; kud-job-launch cleans up');
    return undefined;
  }
  // Status writes come back as update events: once this generation is handled, stop here,
  // unless the labels changed or a retry was asked for (contract section 10).
  const generation = live.metadata.generation ?? 0;
  const handled = conditionFor(conditionsOf(live), ProvisioningCondition.hostsResolved, generation);
  const rerun = rerunReason(live);
  const step = ProvisioningCondition.hostsResolved;
  const cause = causeOf(event);
  // Unknown means a transient fault was recorded and the step is being retried.
  if (handled && handled.status !== 'Unknown' && !rerun) {
    // The event that resolved the hosts, delivered again (its first reply went to a delivery
    // that timed out): the same reply, from status.nodes. Any other event: nothing.
    if (handled.status === 'True' && recordedBy(live.status, step, cause)) {
      context.log.info('hosts resolved by this same event: its reply is sent again', { generation });
      return hostsResolvedAgain(context.functionName, live, replyIdFor(step, cause));
    }
    context.log.debug('hosts already handled for this generation', { generation });
    return undefined;
  }
  if (rerun) context.log.info('re-running the chain for this generation', { generation, why: rerun });
  const current = await recordHandling(clients, live, rerun);
  if (!current) return undefined;
  const outcome = await withRetryingCondition(
    clients,
    provisioningTarget(namespace, object.metadata.name),
    { uid: live.metadata.uid, generation },
    step,
    context.log,
    () => resolveProvisioning(context, clients, clusterFactsFor(context), current, cause),
  );
  return outcome.kind === 'skipped' ? undefined : outcome.event;
}

async function onPing(context: FunctionContext<HostLookupConfig>): Promise<HandlerResult> {
  await sweep(context);
  return undefined;
}

export const definition: FunctionDefinition<HostLookupConfig> = {
  name: 'host-lookup',
  events: {
    [SourceEventTypes.resourceAdd]: on(kubeObjectSchema, onProvisioningChange),
    [SourceEventTypes.resourceUpdate]: on(kubeObjectSchema, onProvisioningChange),
    [SourceEventTypes.ping]: on(pingDataSchema, onPing),
  },
  configSchema: hostLookupConfigSchema,
  metrics: hostLookupMetrics,
  release: stopHostIndexes,
};

/** The func convention's entry point (faas-js-runtime): see shared/server/func-adapter.ts. */
export const handle = funcHandle(definition);
