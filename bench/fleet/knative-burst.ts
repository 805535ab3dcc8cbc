import {
  CoreV1Api,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { createNamespace } from '../../local/control-plane/namespaces.js';
import { shippedFunctionsNamespace } from '../../local/control-plane/tenant.js';
import { startKnativeStack } from '../../local/knative/stack.js';
import { startStackCluster } from '../../local/stack/cluster.js';
import { kubeClients } from '../../shared/k8s/clients.js';
import { provisioningsResource } from '../../shared/k8s/resources.js';
import {
  parseFlowSchemaCounts,
  parseRequestCounts,
  readMetricsText,
  requestDelta,
  totalRequests,
  type RequestCounts,
} from './apiserver-metrics.js';
import { fleetNamespace, provisioning } from './burst.js';
import { writeFloor, type FloorRecipe } from './floor.js';
import { createHosts, inParallel, stallMs } from './hosts.js';
import { reportStall } from './stall-report.js';
import { watchSteps } from './watch-steps.js';

/**
 * The chain-speed burst on the real engine (issue 26 item 4, "on both engines"): a one-machine
 * cluster with the real node, Knative Eventing from its images and the functions of manifests/
 * as pods (startStackCluster + startKnativeStack, as `bpa dev --engine knative` runs them), the
 * fleet's hosts, one warm-up Provisioning, then `provisionings` applied at once and timed until
 * every one has JobLaunched.
 *
 * What differs from the embedded burst, and why:
 *   - The API server counts every client here (Knative's controllers, the kubelet, the Job
 *     controller), so the chain's requests come from API Priority and Fairness: one FlowSchema
 *     per ServiceAccount of the functions and the event sources, whose dispatched counters are
 *     the API server's own count of that client's requests.
 *   - The node is cordoned once the chain is Ready: the burst's KUD Jobs are created (JobLaunched
 *     is what is timed) but their pods stay Pending, or 200 installer pods would take the node.
 *   - The PingSource sweep is deleted, as the embedded bench turns its sweep off: a sweep reads
 *     every Provisioning, and this measures the event path. A burst without progress for
 *     `stallMs` stops, with what had launched.
 *   - The floor is written after the event sources are deleted (its Provisionings wake nothing),
 *     on the same API server, with the recipe of the embedded run of the same size (the same
 *     chain code; here the API server's counts by kind mix in the other clients' writes).
 */
export interface KnativeBurstResult {
  launched: number;
  burstSeconds?: number;
  stoppedBy?: string;
  /** The chain's requests during the burst, by ServiceAccount (API Priority and Fairness). */
  byAccount?: RequestCounts;
  /** Every client's requests during the burst, by verb and resource. */
  allClients?: RequestCounts;
  floor?: { seconds: number; recipe: FloorRecipe };
}

/** The chain's clients: the four functions and the two ApiServerSources (manifests/rbac). */
const accounts = [
  'host-lookup',
  'inventory-render',
  'kud-job-launch',
  'software-install',
  'bpa-resource-source',
  'bpa-job-source',
];
const flowSchemaPrefix = 'bench-chain-';

function flowSchema(account: string): KubernetesObject {
  return {
    apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
    kind: 'FlowSchema',
    metadata: { name: `${flowSchemaPrefix}${account}` },
    spec: {
      // What the suggested `service-accounts` FlowSchema (precedence 9000) gives them anyway.
      priorityLevelConfiguration: { name: 'workload-low' },
      matchingPrecedence: 1000,
      distinguisherMethod: { type: 'ByUser' },
      rules: [
        {
          subjects: [
            {
              kind: 'ServiceAccount',
              serviceAccount: { name: account, namespace: shippedFunctionsNamespace },
            },
          ],
          resourceRules: [
            { verbs: ['*'], apiGroups: ['*'], resources: ['*'], clusterScope: true, namespaces: ['*'] },
          ],
          nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
        },
      ],
    },
  } as KubernetesObject;
}

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export async function runKnativeBurst(options: {
  provisionings: number;
  nodesPer: number;
  log: (line: string) => void;
  /** The floor's recipe (writes per Provisioning); none: no floor. */
  floorRecipe?: FloorRecipe;
}): Promise<KnativeBurstResult> {
  const { provisionings, nodesPer, log } = options;
  const hosts = (provisionings + 1) * nodesPer;
  const result: KnativeBurstResult = { launched: 0 };
  const cluster = await startStackCluster({ fallBack: false });
  let watch: { abort(): void } | undefined;
  try {
    const node = cluster.kubeletNode;
    if (!node) throw new Error('no real node');
    const clients = kubeClients(cluster.kubeConfig);
    const objects = KubernetesObjectApi.makeApiClient(cluster.kubeConfig);
    await createNamespace(cluster.kubeConfig, fleetNamespace);
    await createNamespace(cluster.kubeConfig, shippedFunctionsNamespace);
    const creating = performance.now();
    await createHosts(clients, fleetNamespace, hosts, { done: 0 });
    log(
      `  ${hosts} BareMetalHosts created with their status in ${((performance.now() - creating) / 1000).toFixed(0)} s`,
    );
    const knative = await startKnativeStack({
      kubeConfig: cluster.kubeConfig,
      node,
      config: { BMH_NAMESPACE: fleetNamespace, SWEEP_NAMESPACES: fleetNamespace, IP_SOURCES: 'nics' },
      tenantNamespaces: [fleetNamespace],
    });
    log(
      `  Knative and the chain (functions as pods) Ready after ${(knative.readyAfterMs / 1000).toFixed(0)} s`,
    );
    await objects.delete({
      apiVersion: 'sources.knative.dev/v1',
      kind: 'PingSource',
      metadata: { name: 'bpa-sweep', namespace: shippedFunctionsNamespace },
    });
    await cluster.kubeConfig
      .makeApiClient(CoreV1Api)
      .patchNode({ name: node.name, body: { spec: { unschedulable: true } } }, mergePatch);
    for (const account of accounts) await objects.create(flowSchema(account));

    const launched = new Set<string>();
    let progressAt = performance.now();
    const stepsDone = new Set<string>();
    watch = await watchSteps(cluster.kubeConfig, fleetNamespace, (name, step) => {
      if (!stepsDone.has(`${name} ${step}`)) progressAt = performance.now();
      stepsDone.add(`${name} ${step}`);
      if (step === 'JobLaunched') launched.add(name);
    });
    const until = async (count: number) => {
      progressAt = performance.now();
      while (launched.size < count) {
        if (performance.now() - progressAt > stallMs)
          throw new Error(`no step done for ${stallMs / 1000} s, ${launched.size} launched`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    };
    const target = { ...provisioningsResource, namespace: fleetNamespace };
    const warm = provisioning(provisionings, hosts, nodesPer);
    warm.metadata.name = warm.metadata.labels.cluster = 'fleet-warm-up';
    await clients.custom.createNamespacedCustomObject({ ...target, body: warm });
    await until(1);

    const before = await readMetricsText(cluster.kubeConfig);
    const started = performance.now();
    try {
      await inParallel(
        provisionings,
        async (i) => {
          await clients.custom.createNamespacedCustomObject({
            ...target,
            body: provisioning(i, hosts, nodesPer),
          });
        },
        { done: 0 },
      );
      await until(provisionings + 1);
      result.burstSeconds = (performance.now() - started) / 1000;
    } catch (error) {
      result.stoppedBy = (error as Error).message;
      await reportStall(
        cluster.kubeConfig,
        { fleet: fleetNamespace, functions: shippedFunctionsNamespace },
        log,
      ).catch((reportError: unknown) => log(`  (no stall report: ${String(reportError)})`));
    }
    result.launched = Math.max(0, launched.size - 1);
    const after = await readMetricsText(cluster.kubeConfig);
    result.byAccount = requestDelta(parseFlowSchemaCounts(before), parseFlowSchemaCounts(after));
    result.allClients = requestDelta(parseRequestCounts(before), parseRequestCounts(after));
    for (const key of [...result.byAccount.keys()])
      if (!key.startsWith(flowSchemaPrefix)) result.byAccount.delete(key);

    if (options.floorRecipe && result.burstSeconds !== undefined) {
      // Nothing may react to the floor's writes: the event sources go first.
      for (const name of ['bpa-resources', 'bpa-jobs'])
        await objects.delete({
          apiVersion: 'sources.knative.dev/v1',
          kind: 'ApiServerSource',
          metadata: { name, namespace: shippedFunctionsNamespace },
        });
      const seconds = await writeFloor({
        clients,
        namespace: 'bench-floor',
        systemNamespace: 'bench-floor-system',
        count: provisionings,
        hostsNamespace: fleetNamespace,
        hosts,
        provisioning: (i) => provisioning(i, hosts, nodesPer),
        recipe: options.floorRecipe,
      });
      result.floor = { seconds, recipe: options.floorRecipe };
    }
  } finally {
    watch?.abort();
    await cluster.stop();
  }
  return result;
}

/** `host-lookup 9.0, inventory-render 5.0, ...` per Provisioning, and their sum. */
export function describeAccounts(byAccount: RequestCounts, per: number): { total: number; line: string } {
  const line = [...byAccount]
    .sort(([, a], [, b]) => b - a)
    .map(([key, value]) => `${key.slice(flowSchemaPrefix.length)} ${(value / per).toFixed(1)}`)
    .join(', ');
  return { total: totalRequests(byAccount) / per, line };
}
