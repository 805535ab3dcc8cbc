/** What `bpa demo` prints of the cluster: tables, conditions, the hosts' images, the KUD Job's log. */
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { kudJobName } from '../../shared/core/names.js';
import { describeError } from '../../shared/errors.js';
import { bareMetalHostsResource } from '../../shared/k8s/resources.js';
import type { Condition } from '../../shared/schemas/kube.js';
import type { DemoOutput } from './demo-output.js';
import { labCluster } from './lab-definition.js';

/** `rows` as aligned text columns (the first row is the header). */
export function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  return rows.map((row) =>
    row
      .map((cell, column) => cell.padEnd(widths[column]!))
      .join('  ')
      .trimEnd(),
  );
}

/** One condition as it changes: ✓ True, ✗ False, … Unknown. */
export function reportCondition(out: DemoOutput, condition: Condition): void {
  const text = `${condition.type}=${condition.status}  ${condition.reason ?? ''}${condition.message ? `: ${condition.message}` : ''}`;
  if (condition.status === 'True') out.ok(text);
  else if (condition.status === 'False') out.fail(text);
  else out.info(`… ${text}`);
}

/** Each lab host's spec.image, as host-lookup wrote it from the Image the Provisioning names. */
export async function showHostImages(
  out: DemoOutput,
  kubeConfig: KubeConfig,
  namespace: string,
  hosts: readonly string[],
) {
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const rows = [['host', 'spec.image url', 'checksum (sha256)', 'format']];
  for (const name of hosts) {
    const host = (await custom
      .getNamespacedCustomObject({ ...bareMetalHostsResource, namespace, name })
      .catch(() => undefined)) as { spec?: { image?: Record<string, string> } } | undefined;
    const image = host?.spec?.image;
    rows.push([name, image?.url ?? '(none)', image?.checksum ?? '-', image?.format ?? '-']);
  }
  for (const line of table(rows)) out.info(line);
}

/** The KUD Job's pod output, as `kubectl logs -n bpa-system job/kud-<cluster>` shows it (the node serves it). */
export async function showKudLogs(out: DemoOutput, kubeConfig: KubeConfig, namespace: string) {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const jobName = kudJobName(labCluster);
  try {
    const pods = await core.listNamespacedPod({ namespace, labelSelector: `job-name=${jobName}` });
    const found = pods.items.at(-1);
    const pod = found?.metadata?.name;
    if (!pod) return;
    const text = await core.readNamespacedPodLog({ name: pod, namespace, container: 'kud' });
    out.dim(`kubectl logs ${pod} (the KUD installer stand-in):`);
    for (const line of String(text).trimEnd().split('\n')) out.dim(`  ${line}`);
    // A container that ended badly: how (a signal, OOMKilled, an eviction), which its log cannot say.
    const ended = found.status?.containerStatuses?.find((c) => c.name === 'kud')?.state?.terminated;
    if (ended && ended.exitCode !== 0)
      out.dim(
        `container kud ended: ${ended.reason ?? 'no reason'}, exit code ${ended.exitCode}${ended.signal ? `, signal ${ended.signal}` : ''}${ended.message ? `: ${ended.message}` : ''}`,
      );
    if (found.status?.reason)
      out.dim(
        `pod ${pod}: ${found.status.phase ?? ''} ${found.status.reason}: ${found.status.message ?? ''}`,
      );
  } catch (error) {
    out.dim(`no logs of Job ${jobName}: ${describeError(error).message}`);
  }
}
