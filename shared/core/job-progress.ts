import type { V1Job, V1Pod } from '@kubernetes/client-node';

/**
 * What `status.job` shows while the KUD Job runs (contract section 10, Progress): the pod, its
 * phase, why it waits when it cannot start (no node it may run on, a missing Secret, an image
 * that cannot be pulled), and the seconds left before the Job's deadline.
 */
export interface JobProgress {
  name: string;
  /** The functions' namespace the Job runs in (tenants cannot read its pods there). */
  namespace?: string;
  pod?: string;
  /** The node the pod runs on: the cleanup and the kubeconfig publisher go there. */
  nodeName?: string;
  /** A failed pod's last log lines (bounded, shared/schemas/provisioning.ts jobLogTailMaxBytes). */
  logTail?: string;
  phase?: string;
  waitingReason?: string;
  waitingMessage?: string;
  /** When the deadline ends the Job (startTime + activeDeadlineSeconds). */
  deadline?: string;
  secondsLeft?: number;
}

/** The newest pod of a Job (a backoffLimit 0 Job has one; a replaced one may leave another). */
export function newestPod(pods: readonly V1Pod[]): V1Pod | undefined {
  const time = (pod: V1Pod) => new Date(pod.metadata?.creationTimestamp ?? 0).getTime();
  return [...pods].sort((a, b) => time(b) - time(a))[0];
}

export function jobProgress(job: V1Job, pod: V1Pod | undefined, now: Date): JobProgress {
  const progress: JobProgress = { name: job.metadata?.name ?? '' };
  if (job.metadata?.namespace) progress.namespace = job.metadata.namespace;
  if (pod) {
    progress.pod = pod.metadata?.name;
    if (pod.spec?.nodeName) progress.nodeName = pod.spec.nodeName;
    progress.phase = pod.status?.phase ?? 'Pending';
    const waiting = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])]
      .map((status) => status.state?.waiting)
      .find((state) => state?.reason);
    // Not yet on a node: the scheduler's answer (PodScheduled False, reason Unschedulable, e.g.
    // "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector"), which is
    // what a KUD_NODE_SELECTOR no node matches, or a taint no toleration covers, looks like.
    const unscheduled = pod.spec?.nodeName
      ? undefined
      : pod.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');
    const why = waiting?.reason ? waiting : unscheduled?.reason ? unscheduled : undefined;
    if (why?.reason) {
      progress.waitingReason = why.reason;
      if (why.message) progress.waitingMessage = why.message.slice(0, 512);
    }
  }
  const start = job.status?.startTime ? new Date(job.status.startTime) : undefined;
  const limit = job.spec?.activeDeadlineSeconds;
  if (start && !Number.isNaN(start.getTime()) && limit !== undefined) {
    const deadline = new Date(start.getTime() + limit * 1000);
    progress.deadline = deadline.toISOString().replace(/\.\d{3}Z$/, 'Z');
    progress.secondsLeft = Math.max(0, Math.round((deadline.getTime() - now.getTime()) / 1000));
  }
  return progress;
}

/** The Job controller's reason for a failure by deadline (`Failed`, reason `DeadlineExceeded`). */
export function failedByDeadline(job: V1Job): boolean {
  return (job.status?.conditions ?? []).some(
    (c) =>
      (c.type === 'Failed' || c.type === 'FailureTarget') &&
      c.status === 'True' &&
      c.reason === 'DeadlineExceeded',
  );
}
