/**
 * The chain suites on both engines (test/integration/chain/, issue 14 item 4): one body, run once
 * on the embedded engine (local/stack/index.ts: the in-process broker and sources, the functions in the
 * test process) and once on real Knative Eventing (local/knative/stack.ts: Knative built from its
 * Go modules, the functions as pods from manifests/), each on a one-machine cluster of its own.
 * A suite drives the chain only as a user does: objects through the API server (kubectl,
 * client-node), and at most a CloudEvent posted to the Broker's ingress as `bpa send` would.
 *
 * Own clusters, not the run's shared one: the manifests' ApiServerSources watch every namespace,
 * so on the shared cluster the functions would act on other suites' Provisionings.
 *
 * Real: kube-apiserver, etcd, Kubernetes' own controllers (Jobs, Deployments); on `knative`,
 * Knative Eventing's controller, webhook, MT channel broker, in-memory channel, ApiServerSource
 * adapters and mtping, and its event_display as the dead-letter sink.
 * Imitated: the node (local/node, OUR IMITATION of a kubelet: a pod is a local process in a network
 * namespace); on `knative` the Knative Services run as Deployments and Services through the local
 * Serving overlay (Serving cannot run here, docs/knative.md); on `embedded` the broker and sources
 * are our own (local/broker, local/sources), proven against Knative by
 * test/integration/knative/differential.test.ts.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe } from '@jest/globals';
import {
  BatchV1Api,
  CoreV1Api,
  type KubeConfig,
  type KubernetesObject,
  type V1Job,
} from '@kubernetes/client-node';
import { z } from 'zod';
import {
  createNamespace,
  onboardNamespace,
  uniqueNamespaceName,
  waitFor,
} from '../../local/control-plane/index.js';
import { serviceAccountJwksInCluster } from '../../local/control-plane/control-plane.js';
import { freeLoopbackPort } from '../../local/control-plane/free-port.js';
import { repoRoot } from '../../local/control-plane/repo-root.js';
import { deliveryProbeType } from '../../local/knative/delivery-probe.js';
import { startKnativeStack } from '../../local/knative/stack.js';
import { startStack, stackBrokerName, stackNamespace, type Stack } from '../../local/stack/index.js';
import { startStackCluster, type StackCluster } from '../../local/stack/cluster.js';
import type { FunctionName } from '../../local/stack/function-names.js';
import { kudMultiClusterPath } from '../../shared/core/kud-job.js';
import { conditionOf, readProvisioning } from '../integration/functions/support/fixtures.js';
import { noKnativeReason } from './knative.js';
import { noNodeReason } from './node.js';

export const chainEngineNames = ['embedded', 'knative'] as const;
export type ChainEngineName = (typeof chainEngineNames)[number];

/** Why `engine` cannot run in this run, or undefined when it can. */
export function noEngineReason(engine: ChainEngineName): string | undefined {
  const noNode = noNodeReason();
  if (noNode) return `no node: ${noNode}`;
  return engine === 'knative' ? noKnativeReason() : undefined;
}

/**
 * One describe() per engine, named `<name> [<engine>]`; an engine this run cannot start is
 * describe.skip()ped, saying why on stderr and in its name (no root; BPA_TEST_KNATIVE=0).
 */
export function describeOnEngines(name: string, body: (engine: ChainEngineName) => void): void {
  for (const engine of chainEngineNames) {
    const title = `${name} [${engine}]`;
    const reason = noEngineReason(engine);
    if (!reason) {
      describe(title, () => body(engine));
      continue;
    }
    process.stderr.write(`[chain] skipping "${title}": ${reason}\n`);
    describe.skip(`${title} (skipped: ${reason})`, () => body(engine));
  }
}

/** What a suite's callbacks get before the engine starts. */
export interface ChainSetup {
  cluster: StackCluster;
  kubeConfig: KubeConfig;
  /**
   * The suite's tenant namespace, made on its cluster with Pod Security `restricted` enforced
   * (issue 23 item 1): nothing privileged runs in it.
   */
  namespace: string;
  /**
   * The functions' namespace (`bpa-system`, FUNCTIONS_NAMESPACE of both engines): the KUD,
   * cleanup and publisher Jobs run there and mount the operator's SSH key Secret of it
   * (docs/adr/0013-tenancy.md); made before `prepare` so a suite can write that Secret.
   */
  functionsNamespace: string;
  /**
   * A namespace of the suite for what a tenant may not run (the recorders' pods meet no Pod
   * Security level): the Triggers reach them by pod IP, so it is no tenant's.
   */
  observerNamespace: string;
  /** A temporary directory of the suite (lease files), removed after it. */
  workDir: string;
}

export interface ChainEngineOptions {
  /** Prefix of the suite's namespace. */
  namespacePrefix: string;
  /**
   * bpa-config keys: set through a kustomize overlay on `knative` (the functions read them as
   * pods), as the functions' env on `embedded`: the same names (shared/config.ts).
   */
  config(setup: ChainSetup): Record<string, string>;
  /** Runs after the namespace exists and before the engine starts (Secrets, hosts, pods). */
  prepare?(setup: ChainSetup): Promise<void>;
  /**
   * Runs in afterAll once the engine stopped and before the cluster stops (what `prepare` started
   * outside the cluster: a lab's sshd hosts and their network namespaces on the node's network).
   */
  cleanup?(setup: ChainSetup): Promise<void>;
  /** Triggers added to the manifests' on either engine (a recorder). */
  extraObjects?(setup: ChainSetup): KubernetesObject[];
  /**
   * `knative` only: Eventing's `authentication-oidc: enabled` and the manifests'
   * components/event-authorization (the Broker admits only the senders its EventPolicy names), on
   * a control plane whose service-account keys pods reach (serviceAccountJwksInCluster).
   */
  eventAuthorization?: boolean;
  /**
   * `knative` only: keys of Eventing's config-observability (`metrics-protocol: prometheus`, so
   * that broker-ingress and broker-filter serve /metrics on port 9092).
   */
  knativeObservability?: Record<string, string>;
}

const logLineSchema = z.looseObject({
  msg: z.string(),
  ce_type: z.string().optional(),
  ce_id: z.string().optional(),
  namespace: z.string().optional(),
  name: z.string().optional(),
  // An `event` line's HTTP status; other lines name a write's outcome with it (`KUD Job launch`:
  // `written`, `already-done`), and a line is not dropped for that.
  status: z.union([z.number(), z.string()]).optional(),
  trace_id: z.string().optional(),
});
export type FunctionLogLine = z.infer<typeof logLineSchema>;

/** One event the manifests' dead-letter sink received. */
export interface DeadLetter {
  type: string;
  subject?: string;
  id: string;
  /** The knativeerror* extensions, as strings. */
  errorCode?: string;
  errorDest?: string;
}

export interface ChainEngine {
  readonly engine: ChainEngineName;
  readonly cluster: StackCluster;
  readonly kubeConfig: KubeConfig;
  readonly namespace: string;
  readonly functionsNamespace: string;
  readonly observerNamespace: string;
  readonly workDir: string;
  /** The manifests' Broker's ingress as this process reaches it (`bpa send`'s target). */
  readonly ingressUrl: string;
  /** `kubectl` against the suite's cluster; resolves with stdout. */
  kubectl(args: string[], input?: string): Promise<string>;
  /** The JSON log lines function `name` wrote so far (its pod's log on `knative`). */
  functionLog(name: FunctionName): Promise<FunctionLogLine[]>;
  /** What the manifests' dead-letter sink received so far. */
  deadLetters(): Promise<DeadLetter[]>;
  /** Ends kud-waits' installer of `clusterName` with `exitCode` (its release file on the node). */
  releaseKudJob(clusterName: string, exitCode: 0 | 1): Promise<void>;
  /** The Jobs of the functions' namespace labelled for cluster `clusterName` (the KUD Jobs). */
  jobsOf(clusterName: string): Promise<V1Job[]>;
  /** Waits until Provisioning `name` has condition `type` at `status` for its current generation. */
  waitForCondition(
    name: string,
    type: string,
    status: string,
    timeoutMs: number,
  ): ReturnType<typeof readProvisioning>;
}

const run = promisify(execFile);

const parseLogLines = (text: string): FunctionLogLine[] =>
  text.split('\n').flatMap((line) => {
    if (!line.startsWith('{')) return [];
    try {
      const parsed = logLineSchema.safeParse(JSON.parse(line));
      return parsed.success ? [parsed.data] : [];
    } catch {
      return [];
    }
  });

/**
 * Knative's event_display output (cloudevents sdk-go Event.String()): a block per event starting
 * `☁️  cloudevents.Event`, `  key: value` lines under `Context Attributes,` and `Extensions,`.
 */
export function parseEventDisplay(text: string): DeadLetter[] {
  return text
    .split('☁️  cloudevents.Event')
    .slice(1)
    .map((block) => {
      const attributes = new Map<string, string>();
      for (const line of block.split('\n')) {
        if (line.startsWith('Data')) break;
        const match = /^ {2}([a-z0-9]+): (.*)$/.exec(line);
        if (match) attributes.set(match[1]!, match[2]!);
      }
      const subject = attributes.get('subject');
      const errorCode = attributes.get('knativeerrorcode');
      const errorDest = attributes.get('knativeerrordest');
      return {
        type: attributes.get('type') ?? '',
        id: attributes.get('id') ?? '',
        ...(subject !== undefined ? { subject } : {}),
        ...(errorCode !== undefined ? { errorCode } : {}),
        ...(errorDest !== undefined ? { errorDest } : {}),
      };
    });
}

/** The log of the running pod of the manifests' Deployment `service` (Knative Services run so here). */
async function podLog(kubeConfig: KubeConfig, service: string, container?: string): Promise<string> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const pods = await core.listNamespacedPod({
    namespace: stackNamespace,
    labelSelector: `serving.knative.dev/service=${service}`,
  });
  const pod = pods.items.find((p) => p.status?.phase === 'Running');
  if (!pod?.metadata?.name) throw new Error(`no running ${service} pod in ${stackNamespace}`);
  return core.readNamespacedPodLog({
    namespace: stackNamespace,
    name: pod.metadata.name,
    ...(container ? { container } : {}),
  });
}

/**
 * Registers beforeAll/afterAll that start the suite's cluster and `engine` on it; read the
 * fields inside tests or hooks. Needs root and `npm run build` (the bundles run as pods on
 * `knative`); `knative` also needs its binaries (engines/build.sh knative).
 */
export function useChainEngine(engine: ChainEngineName, options: ChainEngineOptions): ChainEngine {
  let state:
    | { setup: ChainSetup; ingressUrl: string; stack?: Stack; deadLetters: DeadLetter[]; logFile: string }
    | undefined;
  const ready = () => {
    if (!state) throw new Error('useChainEngine(): read the engine inside a test or a hook, after beforeAll');
    return state;
  };

  beforeAll(async () => {
    if (options.eventAuthorization && engine !== 'knative')
      throw new Error('useChainEngine(): eventAuthorization is a setting of real Knative Eventing only');
    if (engine === 'knative')
      for (const bundle of ['host-lookup.mjs', 'inventory-render.mjs', 'kud-job-launch.mjs'])
        if (!existsSync(join(repoRoot(), 'dist/bundle', bundle)))
          throw new Error(`dist/bundle/${bundle} is missing: run npm run build first`);
    const cluster = await startStackCluster({
      fallBack: false,
      extraImageMaps: [join(repoRoot(), 'test/fixtures/node/images.yaml')],
      ...(options.eventAuthorization ? { serviceAccountJwksUri: serviceAccountJwksInCluster } : {}),
    });
    const namespace = await createNamespace(
      cluster.kubeConfig,
      uniqueNamespaceName(options.namespacePrefix),
      {
        'pod-security.kubernetes.io/enforce': 'restricted',
      },
    );
    const functionsNamespace = await createNamespace(cluster.kubeConfig, stackNamespace);
    const observerNamespace = await createNamespace(
      cluster.kubeConfig,
      uniqueNamespaceName(`${options.namespacePrefix}-observers`),
    );
    // The functions act as their ServiceAccounts on both engines: they write only in onboarded
    // namespaces (manifests/tenant, to the ServiceAccounts in bpa-system).
    await onboardNamespace(cluster.kubeConfig, namespace, { functionsNamespace: stackNamespace });
    const workDir = await mkdtemp(join(tmpdir(), `bpa-chain-${engine}-`));
    const setup: ChainSetup = {
      cluster,
      kubeConfig: cluster.kubeConfig,
      namespace,
      functionsNamespace,
      observerNamespace,
      workDir,
    };
    const logFile = join(workDir, 'stack.log');
    state = { setup, ingressUrl: '', deadLetters: [], logFile };
    await options.prepare?.(setup);
    const config = options.config(setup);
    const extraObjects = options.extraObjects?.(setup) ?? [];
    const say = (line: string) => process.stderr.write(`[chain ${engine}] ${line}\n`);
    if (engine === 'embedded') {
      const deadLetters = state.deadLetters;
      const stack = await startStack({
        kubeconfig: cluster.kubeconfigPath,
        port: await freeLoopbackPort(),
        log: () => undefined,
        logFile,
        logLevel: 'info',
        functionsEnv: config,
        // The functions act as their ServiceAccounts of manifests/, as they do as pods on knative.
        serviceAccounts: { config },
        extraObjects,
        onDeadLetter: (event) => {
          const attribute = (key: string) =>
            event.attributes[key] === undefined ? undefined : String(event.attributes[key]);
          const subject = attribute('subject');
          const errorCode = attribute('knativeerrorcode');
          const errorDest = attribute('knativeerrordest');
          deadLetters.push({
            type: attribute('type') ?? '',
            id: attribute('id') ?? '',
            ...(subject !== undefined ? { subject } : {}),
            ...(errorCode !== undefined ? { errorCode } : {}),
            ...(errorDest !== undefined ? { errorDest } : {}),
          });
        },
      });
      state.stack = stack;
      state.ingressUrl = stack.ingressUrl;
    } else {
      const stack = await startKnativeStack({
        kubeConfig: cluster.kubeConfig,
        config,
        extraObjects,
        log: say,
        timeoutMs: 600_000,
        ...(options.eventAuthorization
          ? { features: { 'authentication-oidc': 'enabled' }, components: ['event-authorization'] }
          : {}),
        ...(options.knativeObservability ? { observability: options.knativeObservability } : {}),
      });
      state.ingressUrl = `${stack.ingressBase}/${stackNamespace}/${stackBrokerName}`;
    }
  }, 1_200_000);

  afterAll(async () => {
    await state?.stack?.stop();
    try {
      if (state) await options.cleanup?.(state.setup);
    } finally {
      await state?.setup.cluster.stop();
    }
    if (state?.setup.workDir) await rm(state.setup.workDir, { recursive: true, force: true });
  }, 180_000);

  const kubectl = async (args: string[], input?: string) => {
    const child = run('kubectl', ['--kubeconfig', ready().setup.cluster.kubeconfigPath, ...args], {
      encoding: 'utf8',
      maxBuffer: 8 * 1024 * 1024,
    });
    if (input !== undefined) child.child.stdin?.end(input);
    return (await child).stdout;
  };

  return {
    engine,
    get cluster() {
      return ready().setup.cluster;
    },
    get kubeConfig() {
      return ready().setup.kubeConfig;
    },
    get namespace() {
      return ready().setup.namespace;
    },
    get functionsNamespace() {
      return ready().setup.functionsNamespace;
    },
    get observerNamespace() {
      return ready().setup.observerNamespace;
    },
    get workDir() {
      return ready().setup.workDir;
    },
    get ingressUrl() {
      return ready().ingressUrl;
    },
    kubectl,
    async functionLog(name) {
      const current = ready();
      if (engine === 'knative') return parseLogLines(await podLog(current.setup.kubeConfig, name));
      const text = existsSync(current.logFile) ? await readFile(current.logFile, 'utf8') : '';
      return parseLogLines(text).filter((line) => line['component'] === name);
    },
    async deadLetters() {
      const current = ready();
      if (engine === 'embedded') return [...current.deadLetters];
      // The stack's start-up probe (local/knative/delivery-probe.ts) went to the same sink.
      return parseEventDisplay(await podLog(current.setup.kubeConfig, 'dead-letter', 'event-display')).filter(
        (letter) => letter.type !== deliveryProbeType,
      );
    },
    async releaseKudJob(clusterName, exitCode) {
      const current = ready();
      const node = current.setup.cluster.node;
      if (!node) throw new Error('the suite’s cluster has no node');
      // The KUD Job's pod runs in the functions' namespace (and mounts no token: the waits
      // image then takes a release of any namespace directory; this one names where it runs).
      const dir = join(
        node.workDir,
        'host-paths',
        kudMultiClusterPath,
        '.test-release',
        current.setup.functionsNamespace,
      );
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, clusterName), `${exitCode}\n`);
    },
    async jobsOf(clusterName) {
      const { kubeConfig, functionsNamespace } = ready().setup;
      const batch = kubeConfig.makeApiClient(BatchV1Api);
      return (
        await batch.listNamespacedJob({
          namespace: functionsNamespace,
          labelSelector: `cluster=${clusterName}`,
        })
      ).items;
    },
    waitForCondition(name, type, status, timeoutMs) {
      const { kubeConfig, namespace } = ready().setup;
      return waitFor(
        async () => {
          const provisioning = await readProvisioning(kubeConfig, namespace, name);
          const condition = conditionOf(provisioning, type);
          const current =
            condition?.observedGeneration === undefined ||
            condition.observedGeneration === provisioning.metadata.generation;
          return condition?.status === status && current ? provisioning : undefined;
        },
        { what: `${type} ${status} on Provisioning ${namespace}/${name}`, timeoutMs, intervalMs: 1000 },
      );
    },
  };
}
