/**
 * The chain suites on both engines (test/integration/chain/, issue 14 item 4): one body, run once
 * on the embedded engine (local/stack/index.ts: the in-process broker and sources, the functions in the
 * test process) and once on real Knative Eventing (local/knative/stack.ts: Knative's components
 * and the functions as pods from their images, the manifests with the images-local Component, as
 * `bpa dev --engine knative` runs them), each on a one-machine cluster of its own.
 * A suite drives the chain only as a user does: objects through the API server (kubectl,
 * client-node), and at most a CloudEvent posted to the Broker's ingress as `bpa send` would.
 *
 * Own clusters, not the run's shared one: the manifests' ApiServerSources watch every namespace,
 * so on the shared cluster the functions would act on other suites' Provisionings.
 *
 * Real: kube-apiserver, etcd, Kubernetes' own controllers (Jobs, Deployments, the PersistentVolume
 * binder) and the node (local/kubelet-node: a real kubelet, containerd, kube-proxy and CoreDNS)
 * running every pod from an image: the Jobs from the project's images (cluster.functionsEnv on
 * `embedded`, the images-local Component on `knative`) and the suites' test images
 * (local/images/test-images.ts); on `knative`, Knative Eventing's controller, webhook, MT channel
 * broker, in-memory channel, ApiServerSource adapters and mtping, and its event_display as the
 * dead-letter sink. The functions' pods read the suite's files as a real install gives them
 * (filesForPods: a volume, the manifests' known-hosts Secret).
 * IMITATION: on `knative` the Knative Services run as Deployments and Services through the local
 * Serving overlay (Serving cannot run here, docs/knative.md); on `embedded` the broker and sources
 * are our own (local/broker, local/sources), proven against Knative by
 * test/integration/knative/differential.test.ts.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
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
import { buildTestImages } from '../../local/images/test-images.js';
import { deliveryProbeType } from '../../local/knative/delivery-probe.js';
import { startKnativeStack, type KustomizePatch } from '../../local/knative/stack.js';
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
  // Every pod the API still holds, oldest first: a pod replaced mid-test (a rollout, an eviction)
  // holds the lines written before its replacement started.
  const started = pods.items
    .filter((p) => p.metadata?.name && p.status?.phase !== 'Pending')
    .sort(
      (a, b) =>
        (a.metadata?.creationTimestamp?.getTime() ?? 0) - (b.metadata?.creationTimestamp?.getTime() ?? 0),
    );
  if (started.length === 0) throw new Error(`no started ${service} pod in ${stackNamespace}`);
  const texts = [];
  for (const pod of started) {
    const read = {
      namespace: stackNamespace,
      name: pod.metadata!.name!,
      ...(container ? { container } : {}),
    };
    // A container that restarted wrote its earlier lines to the previous log (kubectl logs --previous).
    const status = pod.status?.containerStatuses?.find((c) => (container ? c.name === container : true));
    if (status?.restartCount)
      texts.push(await core.readNamespacedPodLog({ ...read, previous: true }).catch(() => ''));
    texts.push(await core.readNamespacedPodLog(read).catch(() => ''));
  }
  return texts.filter((text) => text !== '').join('\n');
}

/**
 * The test images the suites' pods run (local/images/test-images.ts), imported into each suite's
 * node: the KUD installer that waits for its release (KUD_IMAGE), the event recorder
 * (startRecorder) and the shell (retried-delivery's install Job).
 */
const chainTestImages = ['kud-waits', 'event-recorder', 'shell'];

/** The claim of the lease file's directory in the functions' namespace (filesForPods). */
const leasesClaim = 'chain-leases';
/** The manifests' Secret of pinned host keys, mounted by software-install (bpa-config.yaml). */
const knownHostsSecret = 'ssh-known-hosts';
const knownHostsInPod = '/etc/bpa/known-hosts/known_hosts';

/**
 * `config` as the functions' pods on `knative` can use it: a pod of the real node has a root of
 * its own and reads no file of this machine, so the files the suite names go as a real install
 * gives them to the pods:
 * - LEASES_SOURCE's directory becomes a volume of host-lookup at the same path: a hostPath
 *   PersistentVolume of the node bound to a claim in the functions' namespace (what Knative
 *   Serving mounts with its kubernetes.podspec-persistent-volume-claim flag), added to the
 *   manifests by a kustomize patch. The directory, not the file: a lease file the suite replaces
 *   (dead-letters puts a file where a directory was) is then seen in the pod, as through any volume.
 * - SSH_KNOWN_HOSTS's content becomes the manifests' Secret ssh-known-hosts, which
 *   software-install mounts at /etc/bpa/known-hosts (manifests/config/bpa-config.yaml).
 */
async function filesForPods(
  setup: ChainSetup,
  config: Record<string, string>,
): Promise<{ config: Record<string, string>; patches: KustomizePatch[] }> {
  const core = setup.kubeConfig.makeApiClient(CoreV1Api);
  const patches: KustomizePatch[] = [];
  const podConfig = { ...config };
  const leases = config['LEASES_SOURCE'];
  if (leases?.startsWith('/')) {
    const dir = dirname(leases);
    // host-lookup runs as a user of its image, not root: mkdtemp's 0700 would keep it out.
    await chmod(dir, 0o755);
    await core.createPersistentVolume({
      body: {
        metadata: { name: leasesClaim },
        spec: {
          capacity: { storage: '1Mi' },
          accessModes: ['ReadOnlyMany'],
          persistentVolumeReclaimPolicy: 'Retain',
          storageClassName: '',
          hostPath: { path: dir, type: 'Directory' },
          claimRef: { namespace: setup.functionsNamespace, name: leasesClaim },
        },
      },
    });
    await core.createNamespacedPersistentVolumeClaim({
      namespace: setup.functionsNamespace,
      body: {
        metadata: { name: leasesClaim },
        spec: {
          accessModes: ['ReadOnlyMany'],
          storageClassName: '',
          volumeName: leasesClaim,
          resources: { requests: { storage: '1Mi' } },
        },
      },
    });
    patches.push({
      target: { group: 'serving.knative.dev', kind: 'Service', name: 'host-lookup' },
      patch: JSON.stringify([
        {
          op: 'add',
          path: '/spec/template/spec/volumes',
          value: [{ name: 'leases', persistentVolumeClaim: { claimName: leasesClaim, readOnly: true } }],
        },
        {
          op: 'add',
          path: '/spec/template/spec/containers/0/volumeMounts',
          value: [{ name: 'leases', mountPath: dir, readOnly: true }],
        },
      ]),
    });
  }
  const knownHosts = config['SSH_KNOWN_HOSTS'];
  if (knownHosts) {
    await core.createNamespacedSecret({
      namespace: setup.functionsNamespace,
      body: {
        metadata: { name: knownHostsSecret },
        stringData: { known_hosts: await readFile(knownHosts, 'utf8') },
      },
    });
    podConfig['SSH_KNOWN_HOSTS'] = knownHostsInPod;
  }
  return { config: podConfig, patches };
}

/**
 * Registers beforeAll/afterAll that start the suite's cluster and `engine` on it; read the
 * fields inside tests or hooks. Needs root and `npm run build` (the node's images carry the
 * bundles); `knative` also needs its binaries (engines/build.sh knative, made into images).
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
      extraImages: buildTestImages({ only: chainTestImages, log: () => undefined }).map((i) => i.archive),
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
    // A pod is refused until its namespace's default ServiceAccount exists (the ServiceAccount
    // admission plugin), and the ReplicaSet and Job controllers back off after a refusal: on a
    // fresh cluster, wait for the token controller's work before anything starts pods there.
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    for (const where of [namespace, functionsNamespace, observerNamespace])
      await waitFor(
        () =>
          core
            .readNamespacedServiceAccount({ name: 'default', namespace: where })
            .then(() => true)
            .catch(() => undefined),
        { what: `ServiceAccount ${where}/default`, timeoutMs: 60_000, intervalMs: 250 },
      );
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
        // The Jobs' images as the node holds them (as `bpa dev` gives them), then the suite's keys.
        functionsEnv: { ...cluster.functionsEnv, ...config },
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
      const pods = await filesForPods(setup, config);
      const stack = await startKnativeStack({
        kubeConfig: cluster.kubeConfig,
        // The real node: Knative and the functions run from their images (the images-local
        // Component), as with `bpa dev --engine knative`; the suite's keys win over the Component's.
        node: cluster.kubeletNode!,
        config: pods.config,
        patches: pods.patches,
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
      const node = current.setup.cluster.kubeletNode;
      if (!node) throw new Error('the suite’s cluster has no node');
      // The node's /opt is <hostRoot>/opt of this machine (local/kubelet-node/sandbox.ts). The KUD
      // Job's pod runs in the functions' namespace (and mounts no token: the waits image then
      // takes a release of any namespace directory; this one names where it runs).
      const dir = join(node.hostRoot, kudMultiClusterPath, '.test-release', current.setup.functionsNamespace);
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
