/**
 * Step 3 of `bpa demo`: the event engine on the cluster the demo started. `embedded`: the
 * in-process broker and sources, the functions in this process; `knative`: real Knative
 * Eventing on the real node (local/kubelet-node), its components and the functions as pods from
 * their images, as `bpa dev --engine knative` runs them.
 */
import type { DeliveryRecord } from '../broker/index.js';
import { startKnativeStack } from '../knative/stack.js';
import { shippedFunctionsNamespace } from '../control-plane/tenant.js';
import { startStack, type Stack } from '../stack/index.js';
import type { StackCluster } from '../stack/cluster.js';
import type { DemoOutput } from './demo-output.js';
import { StepFailure, totalSteps, withTimeout } from './demo-steps.js';
import type { Lab } from './lab.js';
import { labForPods } from './lab-for-pods.js';

/** The lab's settings for the functions, as bpa-config values (the functions run as pods there). */
export function knativeConfigOf(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}

/** What the later steps need of either engine. */
export interface DemoStack {
  kubeConfig: Stack['kubeConfig'];
  /** The Broker's ingress as this process reaches it (the image service posts there). */
  ingressUrl: string;
  /** Where to look: the live view, or what to run with kubectl. */
  watchHint: string;
  logFilePath?: string;
  stop(): Promise<void>;
}

export interface DemoEngineOptions {
  engine: 'embedded' | 'knative';
  cluster: StackCluster;
  lab: Lab;
  out: DemoOutput;
  /** Step budgets in ms. */
  timeouts: { lab: number; stack: number; knative: number };
  /** One line per event delivery (embedded engine). */
  showEvent: (record: DeliveryRecord) => void;
  /** Broker port to start from (embedded engine). */
  port?: number;
}

/**
 * Starts the engine. Knative: the lab's resources are applied first (its sources see them at
 * start); embedded: the caller applies them once it holds the running stack (so a failure
 * there still stops it and names its log).
 */
export async function startDemoEngine(options: DemoEngineOptions): Promise<DemoStack> {
  const { engine, cluster, lab, out, timeouts, showEvent } = options;
  if (engine === 'knative') {
    const node = cluster.kubeletNode;
    if (!node)
      throw new StepFailure(
        'start Knative Eventing',
        '--engine knative needs the node (root and network namespaces)',
      );
    out.step(3, totalSteps, 'Start real Knative Eventing and the functions on the node');
    out.dim(
      "Knative Eventing built from its Go modules into images, imported into the node and installed from its own config/; manifests/ applied with the project's images, its Knative Services as Deployments (Serving cannot run here)",
    );
    await withTimeout('create the lab resources', timeouts.lab, lab.applyToCluster(cluster.kubeConfig));
    // The functions are pods: the lab's lease file and known_hosts go to a ConfigMap and a Secret.
    const forPods = await withTimeout(
      'create the lab resources',
      timeouts.lab,
      labForPods(cluster.kubeConfig, lab, shippedFunctionsNamespace),
    );
    const knative = await withTimeout(
      'start Knative Eventing',
      timeouts.knative,
      startKnativeStack({
        kubeConfig: cluster.kubeConfig,
        node,
        config: forPods.config,
        log: (line) => out.dim(line),
        timeoutMs: timeouts.knative,
      }),
    ).catch((error: unknown) => {
      forPods.stop();
      throw error;
    });
    for (const note of knative.notes) out.dim(`serving overlay: ${note}`);
    out.info(
      `engine      Knative Eventing ${knative.install.version} (real), ${knative.ready.length} objects Ready`,
    );
    out.info(`broker      ${knative.ingressBase}/bpa-system/default`);
    out.info(`kubeconfig  ${cluster.kubeconfigPath}`);
    return {
      kubeConfig: cluster.kubeConfig,
      ingressUrl: `${knative.ingressBase}/bpa-system/default`,
      watchHint: `kubectl --kubeconfig ${cluster.kubeconfigPath} get brokers,triggers,apiserversources,pingsources,pods -A`,
      // Knative and the functions go with the cluster; only the lease file's copying is ours.
      stop: async () => forPods.stop(),
    };
  }

  out.step(3, totalSteps, 'Start the embedded stack');
  out.dim('the embedded Knative broker, local sources, the four functions');
  const embedded = await withTimeout(
    'start the embedded stack',
    timeouts.stack,
    startStack({
      kubeconfig: cluster.kubeconfigPath,
      ...(options.port ? { port: options.port } : {}),
      log: (line) => out.dim(line),
      onDelivery: showEvent,
      // The Jobs' images as the real node holds them, then the lab's settings.
      functionsEnv: { ...cluster.functionsEnv, ...lab.functionsEnv },
      // The functions act as their ServiceAccounts of manifests/, as on a cluster.
      serviceAccounts: { config: knativeConfigOf({ ...cluster.functionsEnv, ...lab.functionsEnv }) },
      // The sweep is not needed for a healthy run; keep it quiet unless it is.
      pingIntervalMs: 60_000,
    }),
  );
  out.info(`engine      embedded (the in-process broker and sources)`);
  out.info(`broker      ${embedded.ingressUrl}`);
  out.info(`live view   ${embedded.liveViewUrl}   (open it to watch the run)`);
  out.info(`kubeconfig  ${embedded.kubeconfigPath}`);
  out.info(`logs        ${embedded.logFilePath}`);
  return {
    kubeConfig: embedded.kubeConfig,
    ingressUrl: embedded.ingressUrl,
    watchHint: `live view ${embedded.liveViewUrl}`,
    logFilePath: embedded.logFilePath,
    stop: () => embedded.stop(),
  };
}
