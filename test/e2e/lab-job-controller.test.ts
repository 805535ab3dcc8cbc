import { describe, expect, it } from '@jest/globals';
import { BatchV1Api, type V1Job } from '@kubernetes/client-node';
import { startSimulatedJobController } from '../../local/lab/job-controller.js';
import { waitFor } from '../../local/control-plane/wait.js';
import { useTestCluster } from '../support/cluster.js';

const cluster = useTestCluster();

const kudLikeJob = (name: string, labels: Record<string, string>): V1Job => ({
  metadata: { name, labels },
  spec: {
    backoffLimit: 0,
    template: {
      spec: {
        restartPolicy: 'Never',
        containers: [{ name: 'kud', image: 'example/kud:1', command: ['/bin/true'] }],
      },
    },
  },
});

describe('the simulated Job controller of the demo lab', () => {
  it('marks the project’s Jobs Complete the way the Job controller does, and leaves other Jobs alone', async () => {
    const batch = cluster.kubeConfig.makeApiClient(BatchV1Api);
    const namespace = cluster.namespace;
    await batch.createNamespacedJob({
      namespace,
      body: kudLikeJob('kud-edge', { 'app.kubernetes.io/managed-by': 'bpa-functions', cluster: 'edge' }),
    });
    await batch.createNamespacedJob({ namespace, body: kudLikeJob('someone-else', { app: 'other' }) });
    const lines: string[] = [];
    const errors: unknown[] = [];
    const controller = startSimulatedJobController({
      kubeConfig: cluster.kubeConfig,
      namespace,
      runMs: 50,
      report: (line) => lines.push(line),
      onError: (error) => errors.push(error),
    });
    try {
      const job = await waitFor(
        async () => {
          const current = await batch.readNamespacedJob({ name: 'kud-edge', namespace });
          return current.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True')
            ? current
            : undefined;
        },
        { what: 'Job kud-edge to be Complete', timeoutMs: 30_000 },
      );
      expect(errors).toEqual([]);
      const types = (job.status?.conditions ?? []).map((c) => [c.type, c.status, c.reason]);
      expect(types).toEqual([
        ['SuccessCriteriaMet', 'True', 'CompletionsReached'],
        ['Complete', 'True', 'CompletionsReached'],
      ]);
      expect(job.status?.succeeded).toBe(1);
      expect(job.status?.active ?? 0).toBe(0);
      expect(job.status?.startTime).toBeDefined();
      expect(job.status?.completionTime).toBeDefined();
      expect(new Date(job.status!.completionTime!).getTime()).toBeGreaterThanOrEqual(
        new Date(job.status!.startTime!).getTime(),
      );
      expect([...controller.completed]).toEqual(['kud-edge']);
      expect(lines.join('\n')).toMatch(/simulated Job controller/);
      const other = await batch.readNamespacedJob({ name: 'someone-else', namespace });
      expect(other.status?.conditions ?? []).toEqual([]);
    } finally {
      controller.stop();
    }
  });
});
