import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { chainSteps } from './watch-steps.js';

interface ListedProvisioning {
  metadata: { name: string };
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

/**
 * What a stalled burst leaves behind, printed before its cluster goes: how many Provisionings
 * stopped after which step, one of them with its conditions, and each pod of the functions'
 * namespace with its restarts and its last warnings. So a stall says where the chain stopped.
 */
export async function reportStall(
  kubeConfig: KubeConfig,
  namespaces: { fleet: string; functions: string },
  log: (line: string) => void,
): Promise<void> {
  const listed = (await kubeConfig.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({
    group: 'bpa.akraino.org',
    version: 'v1alpha1',
    plural: 'provisionings',
    namespace: namespaces.fleet,
  })) as { items: ListedProvisioning[] };
  const byLastStep = new Map<string, ListedProvisioning[]>();
  for (const item of listed.items) {
    const done = chainSteps.filter((step) =>
      item.status?.conditions?.some((c) => c.type === step && c.status === 'True'),
    );
    const last = done.at(-1) ?? 'no step';
    if (last !== 'JobLaunched') byLastStep.set(last, [...(byLastStep.get(last) ?? []), item]);
  }
  for (const [step, items] of byLastStep) {
    const [first] = items;
    const conditions = (first?.status?.conditions ?? [])
      .map(
        (c) => `${c.type}=${c.status}${c.reason ? ` ${c.reason}` : ''}${c.message ? `: ${c.message}` : ''}`,
      )
      .join('; ');
    log(
      `  stalled after ${step}: ${items.length}, e.g. ${first?.metadata.name} (${conditions || 'no conditions'})`,
    );
  }
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const pods = await core.listNamespacedPod({ namespace: namespaces.functions });
  for (const pod of pods.items) {
    const name = pod.metadata?.name ?? '';
    const restarts = (pod.status?.containerStatuses ?? []).reduce((sum, s) => sum + s.restartCount, 0);
    const logText = await core
      .readNamespacedPodLog({ name, namespace: namespaces.functions, tailLines: 2000 })
      .catch((error: unknown) => `(no log: ${String(error)})`);
    const warnings = String(logText)
      .split('\n')
      .filter((line) => /"level":"(warn|error)"/.test(line));
    log(
      `  pod ${name}: ${pod.status?.phase}, ${restarts} restarts, ${warnings.length} warnings in its last 2000 lines`,
    );
    for (const line of warnings.slice(-3)) log(`    ${line.slice(0, 400)}`);
  }
}
