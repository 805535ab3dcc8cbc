import type { KubeConfig, V1Job, V1JobCondition } from '@kubernetes/client-node';
import { Watch } from '@kubernetes/client-node';
import { isStatus } from '../control-plane/apply.js';
import { kubeClients } from '../../shared/k8s/clients.js';
import { managedByLabel, managedByValue } from '../../shared/k8s/resources.js';

export interface SimulatedJobControllerOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  /** How long the simulated KUD run takes, from start to Complete. Default 1500 ms. */
  runMs?: number;
  /** One line per status write (for the demo's console). */
  report?: (line: string) => void;
  /** Called with each error (watch or status write); the controller keeps going. */
  onError?: (error: unknown) => void;
}

export interface SimulatedJobController {
  /** Names of the Jobs it marked Complete. */
  completed: ReadonlySet<string>;
  stop(): void;
}

const nowRfc3339 = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

const condition = (type: string, reason: string, message: string, at: string): V1JobCondition =>
  ({
    type,
    status: 'True',
    reason,
    message,
    lastProbeTime: at,
    lastTransitionTime: at,
  }) as unknown as V1JobCondition;

const isTerminal = (job: V1Job) =>
  (job.status?.conditions ?? []).some(
    (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
  );

/**
 * Stands in for Kubernetes' Job controller, which this machine does not run (no
 * kube-controller-manager, no kubelet: the KUD installer never actually runs). For each Job
 * the functions create, it writes the status a Job controller writes for a pod that ran and
 * succeeded: first startTime + active 1, then, after `runMs`, succeeded 1, completionTime and
 * the conditions SuccessCriteriaMet and Complete (reason CompletionsReached).
 */
export function startSimulatedJobController(options: SimulatedJobControllerOptions): SimulatedJobController {
  const { kubeConfig, namespace } = options;
  const { batch } = kubeClients(kubeConfig);
  const runMs = options.runMs ?? 1500;
  const report = options.report ?? (() => undefined);
  const onError = options.onError ?? (() => undefined);
  const completed = new Set<string>();
  const handled = new Set<string>();
  const timers = new Set<NodeJS.Timeout>();
  let stopped = false;
  let abort: AbortController | undefined;

  /** Read-modify-write of the status subresource, retried on conflicts. */
  const writeStatus = async (name: string, change: (job: V1Job) => V1Job['status']) => {
    for (let attempt = 1; ; attempt++) {
      const job = await batch.readNamespacedJob({ name, namespace });
      try {
        await batch.replaceNamespacedJobStatus({ name, namespace, body: { ...job, status: change(job) } });
        return;
      } catch (error) {
        if (attempt < 5 && isStatus(error, 409)) continue;
        throw error;
      }
    }
  };

  const run = async (name: string) => {
    const startTime = nowRfc3339();
    await writeStatus(name, (job) => ({
      ...job.status,
      startTime: startTime as unknown as Date,
      active: 1,
      ready: 0,
    }));
    report(
      `Job ${name}: running (simulated Job controller: no kubelet here, the KUD installer does not really run)`,
    );
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, runMs);
      timers.add(timer);
    });
    if (stopped) return;
    const finished = nowRfc3339();
    await writeStatus(name, (job) => ({
      ...job.status,
      active: 0,
      ready: 0,
      succeeded: 1,
      terminating: 0,
      startTime: (job.status?.startTime ?? startTime) as unknown as Date,
      completionTime: finished as unknown as Date,
      uncountedTerminatedPods: {},
      conditions: [
        ...(job.status?.conditions ?? []),
        condition(
          'SuccessCriteriaMet',
          'CompletionsReached',
          'Reached expected number of succeeded pods',
          finished,
        ),
        condition('Complete', 'CompletionsReached', 'Reached expected number of succeeded pods', finished),
      ],
    }));
    completed.add(name);
    report(`Job ${name}: Complete (status written by the simulated Job controller)`);
  };

  const consider = (job: V1Job) => {
    const name = job.metadata?.name;
    if (!name || stopped || isTerminal(job) || handled.has(`${name}/${job.metadata?.uid}`)) return;
    handled.add(`${name}/${job.metadata?.uid}`);
    run(name).catch(onError);
  };

  const watch = new Watch(kubeConfig);
  const start = async () => {
    if (stopped) return;
    try {
      const list = await batch.listNamespacedJob({
        namespace,
        labelSelector: `${managedByLabel}=${managedByValue}`,
      });
      list.items.forEach(consider);
      abort = await watch.watch(
        `/apis/batch/v1/namespaces/${namespace}/jobs`,
        {
          labelSelector: `${managedByLabel}=${managedByValue}`,
          resourceVersion: list.metadata?.resourceVersion,
        },
        (phase, job: V1Job) => {
          if (phase === 'ADDED' || phase === 'MODIFIED') consider(job);
        },
        () => {
          if (!stopped) setTimeout(() => void start(), 500).unref();
        },
      );
      if (stopped) abort.abort();
    } catch (error) {
      onError(error);
      if (!stopped) setTimeout(() => void start(), 1000).unref();
    }
  };
  void start();

  return {
    completed,
    stop() {
      stopped = true;
      abort?.abort();
      for (const timer of timers) clearTimeout(timer);
    },
  };
}
