import { Watch, type KubeConfig } from '@kubernetes/client-node';

/** The chain's steps, in order: a Provisioning that gets one more of them True has progressed. */
export const chainSteps = ['HostsResolved', 'InventoryRendered', 'JobLaunched'] as const;

/**
 * Calls `onStep` for each Provisioning and chain step that is True (JobLaunched is the one the
 * burst waits for; the others tell a slow burst from a stalled one). The watch is opened again
 * whenever it ends (the API server closes watches; a loaded one drops them): a new watch starts
 * with every existing object, and a name and step seen twice is the caller's to ignore.
 */
export async function watchSteps(
  kubeConfig: KubeConfig,
  namespace: string,
  onStep: (name: string, step: (typeof chainSteps)[number]) => void,
): Promise<{ abort(): void }> {
  let stopped = false;
  let current: AbortController | undefined;
  const open = async (): Promise<void> => {
    if (stopped) return;
    current = await new Watch(kubeConfig).watch(
      `/apis/bpa.akraino.org/v1alpha1/namespaces/${namespace}/provisionings`,
      {},
      (
        _phase,
        object: { metadata: { name: string }; status?: { conditions?: { type: string; status: string }[] } },
      ) => {
        for (const step of chainSteps)
          if (object.status?.conditions?.some((c) => c.type === step && c.status === 'True'))
            onStep(object.metadata.name, step);
      },
      () => void setTimeout(() => void open(), 500),
    );
  };
  await open();
  return {
    abort: () => {
      stopped = true;
      current?.abort();
    },
  };
}
