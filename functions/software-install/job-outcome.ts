import type { CloudEvent } from 'cloudevents';
import { z } from 'zod';
import { chainEvent } from '../../shared/cloudevents/chain-event.js';
import { EventTypes, hostResultSchema, softwareSubject } from '../../shared/events/types.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { conditionFor, conditionsOf } from '../../shared/k8s/conditions.js';
import { getCustomObject } from '../../shared/k8s/custom-objects.js';
import { echoWanted } from '../../shared/k8s/own-writes.js';
import { applyStatus } from '../../shared/k8s/status-apply.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import type { FunctionMetrics } from '../../shared/telemetry/metrics.js';
import { recordHostOutcomes } from './metrics.js';
import { SoftwareCondition, eventHost, softwareRef, softwareTarget } from './software-status.js';
import { functionManager, functionName } from './name.js';

/** A host's result as the install Job records it on status (install-job/run.ts hostStatus). */
const recordedHostSchema = hostResultSchema.extend({
  hostKeyFingerprint: z.string().optional(),
  connectMs: z.number().nonnegative().optional(),
});

/**
 * The install Job writes its outcome to the Software's status; its status write comes back to
 * software-install as the Software's update event, which announces it on the broker
 * (software.installed or software.failed) once per Job: status.announcedJob records which.
 */
export function outcomeToAnnounce(live: StoredObject): { job: string; installed: boolean } | undefined {
  const job = live.status?.installJob;
  if (typeof job !== 'string' || live.status?.announcedJob === job) return undefined;
  const installed = conditionFor(
    conditionsOf(live),
    SoftwareCondition.installed,
    live.metadata.generation ?? 0,
  );
  if (installed?.status !== 'True' && installed?.status !== 'False') return undefined;
  return { job, installed: installed.status === 'True' };
}

/** The event for the Job's recorded outcome, after marking it announced (undefined: someone else did). */
export async function announceJobOutcome(
  clients: KubeClients,
  live: StoredObject,
  metrics?: FunctionMetrics,
): Promise<CloudEvent<unknown> | undefined> {
  const outcome = outcomeToAnnounce(live);
  if (!outcome) return undefined;
  const ref = softwareRef(live);
  const target = softwareTarget(ref.namespace, ref.name);
  // The apply restates what the function owns, read from managedFields: an object without them
  // (trimmed by a cache) is read whole first, and still has to show this outcome unannounced.
  const base = Array.isArray(live.metadata.managedFields) ? live : await getCustomObject(clients, target);
  if (!base || outcomeToAnnounce(base)?.job !== outcome.job) return undefined;
  // A resourceVersion precondition: of two deliveries of the same update, one announces. Its
  // echo is wanted (own-writes.ts): there decideInstall looks again, for nodes that joined the
  // cluster while the Job ran (this request's one reply is the announcement).
  const written = await echoWanted(() =>
    applyStatus(clients, target, base, {
      manager: functionManager,
      conditions: [],
      fields: { announcedJob: outcome.job },
    }),
  );
  if (written.outcome !== 'written') return undefined;
  const cluster = live.metadata.labels?.cluster ?? '';
  const recorded = z.array(recordedHostSchema).catch([]).parse(live.status?.hosts);
  // Once per Job, by whoever announces it (the precondition above).
  recordHostOutcomes(metrics, recorded);
  const hosts = recorded.map(eventHost);
  const subject = softwareSubject(ref.namespace, ref.name);
  if (outcome.installed)
    return chainEvent(
      EventTypes.softwareInstalled,
      functionName,
      subject,
      { software: ref, cluster, hosts },
      { cluster },
    );
  const condition = conditionFor(conditionsOf(live), SoftwareCondition.installed, ref.generation);
  return chainEvent(
    EventTypes.softwareFailed,
    functionName,
    subject,
    {
      software: ref,
      cluster,
      reason: condition?.reason || 'InstallFailed',
      message: condition?.message || `Job ${outcome.job} failed`,
      hosts,
    },
    { cluster },
  );
}
