import { CoreV1Api, CustomObjectsApi, KubernetesObjectApi } from '@kubernetes/client-node';
import type { DeliveryRecord } from '../broker/index.js';
import { applyObject } from '../control-plane/apply.js';
import { shippedFunctionsNamespace } from '../control-plane/tenant.js';
import { startKnativeStack } from '../knative/stack.js';
import { startStack, type Stack } from '../stack/index.js';
import { shortEventType } from '../stack/delivery-line.js';
import { provisioningsResource, softwaresResource } from '../../shared/k8s/resources.js';
import type { Condition } from '../../shared/schemas/kube.js';
import type { HostResult } from '../../shared/events/types.js';
import type { ResolvedNode } from '../../shared/schemas/node.js';
import type { DemoOutput } from './demo-output.js';
import { followConditions, type FollowedObject } from './follow-conditions.js';
import { labCluster, labProvisioning, labSoftware } from './lab-definition.js';
import { startLab, type Lab } from './lab.js';
import { describeError } from '../../shared/errors.js';
import { kudJobName } from '../../shared/core/names.js';
import { describeStackCluster, startStackCluster, type StackCluster } from '../stack/cluster.js';
import { startLocalImageService, type LocalImageService } from '../image-service.js';
import { createLogger } from '../../shared/log.js';
import { bareMetalHostsResource } from '../../shared/k8s/resources.js';
import { demoImageFile, uploadDemoImage } from './demo-image.js';

export interface DemoOptions {
  out: DemoOutput;
  /** Broker port to start from (default 8080, or the next free one). */
  port?: number;
  /** Show one line per event delivery. Default true. */
  showEvents?: boolean;
  /** Run on the one-machine cluster with its node (default true); false: the control plane alone. */
  node?: boolean;
  /** Where the cluster's admin kubeconfig is written (kept). Default: a temporary file. */
  kubeconfigOut?: string;
  /** Image maps the node reads after its own (tests). */
  extraImageMaps?: string[];
  /** Per-step budgets in ms. */
  timeouts?: Partial<
    Record<'cluster' | 'stack' | 'knative' | 'lab' | 'image' | 'provisioning' | 'software', number>
  >;
  /** Keep the stack running after the summary until this resolves (bpa demo --keep). */
  keepUntil?: () => Promise<void>;
  /**
   * The event engine: `embedded` (default) the in-process broker and sources, with the functions
   * in this process; `knative` real Knative Eventing on the node (local/knative/), the functions
   * as its pods. `knative` needs the node.
   */
  engine?: 'embedded' | 'knative';
}

/** The lab's settings for the functions, as bpa-config values (the functions run as pods there). */
function knativeConfigOf(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}

/** What the later steps need of either engine. */
interface DemoStack {
  kubeConfig: Stack['kubeConfig'];
  /** The Broker's ingress as this process reaches it (the image service posts there). */
  ingressUrl: string;
  /** Where to look: the live view, or what to run with kubectl. */
  watchHint: string;
  logFilePath?: string;
  stop(): Promise<void>;
}

export interface DemoResult {
  ok: boolean;
  /** The step that failed, when one did. */
  failedStep?: string;
  message?: string;
}

const defaultTimeouts = {
  cluster: 300_000,
  stack: 120_000,
  lab: 60_000,
  image: 120_000,
  provisioning: 240_000,
  software: 180_000,
  knative: 300_000,
};
const totalSteps = 6;

class StepFailure extends Error {
  constructor(
    readonly step: string,
    message: string,
  ) {
    super(message);
  }
}

async function withTimeout<T>(step: string, timeoutMs: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new StepFailure(step, `did not finish within ${Math.round(timeoutMs / 1000)} s`)),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([work, timeout]);
  } catch (error) {
    if (error instanceof StepFailure) throw error;
    throw new StepFailure(step, describeError(error).message);
  } finally {
    clearTimeout(timer);
  }
}

const conditionTrue = (object: FollowedObject, type: string) =>
  object.status?.conditions?.some((c) => c.type === type && c.status === 'True' && observed(c, object)) ??
  false;
const observed = (condition: Condition, object: FollowedObject) =>
  condition.observedGeneration === undefined || condition.observedGeneration === object.metadata?.generation;

function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  return rows.map((row) =>
    row
      .map((cell, column) => cell.padEnd(widths[column]!))
      .join('  ')
      .trimEnd(),
  );
}

/**
 * `bpa demo`: the one-machine cluster (control plane, Kubernetes' controllers, the node), a lab
 * of three hosts on the node's network (real sshd), the embedded stack, then one Provisioning and
 * one Software through the whole chain, every step shown as it happens. The KUD Job really runs
 * on the node: its container is the KUD installer stand-in, which checks the inventory with
 * Ansible and pings every lab host. With `node: false` (or where the node cannot run) it runs on
 * the control plane alone: nothing runs the Job, so the demo ends once the Job is launched.
 * Never throws: the result names the step that failed.
 */
export async function runDemo(options: DemoOptions): Promise<DemoResult> {
  const { out } = options;
  const timeouts = { ...defaultTimeouts, ...options.timeouts };
  const started = Date.now();
  let cluster: StackCluster | undefined;
  let lab: Lab | undefined;
  let stack: DemoStack | undefined;
  const engine = options.engine ?? 'embedded';
  let images: LocalImageService | undefined;
  let finished = false;
  const showEvent = (record: DeliveryRecord) => {
    // Deliveries still draining after the summary would only clutter it.
    if (options.showEvents === false || finished) return;
    const status = record.status === null ? 'no answer' : String(record.status);
    const note = record.outcome === 'delivered' ? '' : ` ${record.outcome}`;
    out.dim(
      `event ${shortEventType(record.eventType)} → ${record.trigger}  ${status}${note}  ${Math.round(record.latencyMs)} ms`,
    );
  };

  out.line('bpa demo: a Provisioning and a Software resource through the whole chain, on this machine.');

  try {
    // 1. The cluster first: the lab's hosts join the node's network.
    out.step(1, totalSteps, 'Start the one-machine cluster');
    cluster = await withTimeout(
      'start the cluster',
      timeouts.cluster,
      startStackCluster({
        node: options.node ?? true,
        ...(options.kubeconfigOut ? { kubeconfigOut: options.kubeconfigOut } : {}),
        ...(options.extraImageMaps ? { extraImageMaps: options.extraImageMaps } : {}),
      }),
    );
    if (cluster.fallback) out.fail(`${cluster.fallback}; running on the control plane alone (--no-node)`);
    for (const line of describeStackCluster(cluster)) out.info(line);
    const onNode = cluster.node !== undefined;

    out.step(2, totalSteps, 'Prepare the lab');
    lab = await withTimeout(
      'prepare the lab',
      timeouts.lab,
      startLab(cluster.nodeNetwork ? { network: cluster.nodeNetwork } : {}),
    );
    out.line(
      lab.sshKind === 'openssh'
        ? "The lab: BareMetalHosts, a DHCP lease file and real OpenSSH sshd hosts, each in its own network namespace on the node's network. Their apt-get is recorded, never run."
        : 'The lab is simulated: BareMetalHosts, a DHCP lease file and SSH servers on 127.0.0.N in this process.',
    );
    const sshColumn = lab.sshKind === 'openssh' ? 'SSH (OpenSSH sshd)' : 'SSH (simulated)';
    for (const line of table([
      ['host', 'node', 'MAC', 'IP', 'IP known from', sshColumn],
      ...lab.hosts.map((h) => [
        h.bmhName,
        h.label,
        h.mac,
        h.ip,
        h.inLeaseFile ? 'DHCP lease' : 'inspected NIC',
        `${h.ip}:${lab!.sshPort}`,
      ]),
    ]))
      out.info(line);
    out.dim(`lease file ${lab.leaseFilePath}, known_hosts ${lab.knownHostsPath}`);

    const activeLab = lab;
    const activeCluster = cluster;
    if (engine === 'knative') {
      if (!onNode)
        throw new StepFailure(
          'start Knative Eventing',
          '--engine knative needs the node (root and network namespaces)',
        );
      out.step(3, totalSteps, 'Start real Knative Eventing and the functions on the node');
      out.dim(
        'Knative Eventing built from its Go modules, installed from its own config/; manifests/ applied, its Knative Services as Deployments (Serving cannot run here)',
      );
      await withTimeout(
        'create the lab resources',
        timeouts.lab,
        activeLab.applyToCluster(activeCluster.kubeConfig),
      );
      const knative = await withTimeout(
        'start Knative Eventing',
        timeouts.knative,
        startKnativeStack({
          kubeConfig: activeCluster.kubeConfig,
          config: knativeConfigOf(activeLab.functionsEnv),
          log: (line) => out.dim(line),
          timeoutMs: timeouts.knative,
        }),
      );
      for (const note of knative.notes) out.dim(`serving overlay: ${note}`);
      out.info(
        `engine      Knative Eventing ${knative.install.version} (real), ${knative.ready.length} objects Ready`,
      );
      out.info(`broker      ${knative.ingressBase}/bpa-system/default`);
      out.info(`kubeconfig  ${activeCluster.kubeconfigPath}`);
      stack = {
        kubeConfig: activeCluster.kubeConfig,
        ingressUrl: `${knative.ingressBase}/bpa-system/default`,
        watchHint: `kubectl --kubeconfig ${activeCluster.kubeconfigPath} get brokers,triggers,apiserversources,pingsources,pods -A`,
        stop: async () => undefined,
      };
    } else {
      out.step(3, totalSteps, 'Start the embedded stack');
      out.dim('the embedded Knative broker, local sources, the four functions');
      const embedded = await withTimeout(
        'start the embedded stack',
        timeouts.stack,
        startStack({
          kubeconfig: activeCluster.kubeconfigPath,
          ...(options.port ? { port: options.port } : {}),
          log: (line) => out.dim(line),
          onDelivery: showEvent,
          functionsEnv: activeLab.functionsEnv,
          // The functions act as their ServiceAccounts of manifests/, as on a cluster.
          serviceAccounts: { config: knativeConfigOf(activeLab.functionsEnv) },
          // The sweep is not needed for a healthy run; keep it quiet unless it is.
          pingIntervalMs: 60_000,
        }),
      );
      out.info(`engine      embedded (the in-process broker and sources)`);
      out.info(`broker      ${embedded.ingressUrl}`);
      out.info(`live view   ${embedded.liveViewUrl}   (open it to watch the run)`);
      out.info(`kubeconfig  ${embedded.kubeconfigPath}`);
      out.info(`logs        ${embedded.logFilePath}`);
      stack = {
        kubeConfig: embedded.kubeConfig,
        ingressUrl: embedded.ingressUrl,
        watchHint: `live view ${embedded.liveViewUrl}`,
        logFilePath: embedded.logFilePath,
        stop: () => embedded.stop(),
      };
      await withTimeout('create the lab resources', timeouts.lab, activeLab.applyToCluster(stack.kubeConfig));
    }
    const kubeConfig = stack.kubeConfig;
    out.ok(
      `namespace ${activeLab.namespace}: ${activeLab.hosts.length} BareMetalHosts (NICs in status), Secret ssh-key-secret`,
    );
    out.dim(
      onNode
        ? "Kubernetes' own Job controller runs the KUD Job on the node; its container is the KUD installer stand-in (Ansible checks the inventory and pings every host; nothing is installed)."
        : 'No node: nothing runs the KUD Job, so the cluster cannot become Ready; the demo stops once the Job is launched.',
    );

    // 4. An OS image uploaded and verified, then the Provisioning that names it → Ready (on the
    // node) or → JobLaunched (without it).
    out.step(
      4,
      totalSteps,
      `Upload an OS image, apply Provisioning ${activeLab.namespace}/${labCluster} (2 masters, 1 worker)`,
    );
    const activeStack = stack;
    const uploaded = await withTimeout(
      'upload the OS image',
      timeouts.image,
      (async () => {
        images = await startLocalImageService({
          kubeConfig,
          forwardTo: activeStack.ingressUrl,
          log: createLogger({ level: 'warn', sink: (line) => out.dim(line) }),
        });
        out.info(`image service ${images.uploadUrl} (tus), store ${images.store.endpoint} (versitygw)`);
        return uploadDemoImage({
          kubeConfig,
          images,
          namespace: activeLab.namespace,
          cluster: labCluster,
          timeoutMs: timeouts.image,
        });
      })(),
    );
    const imageName = uploaded.image.metadata.name;
    out.ok(
      `Image ${activeLab.namespace}/${imageName}: ${demoImageFile} (${uploaded.bytes} bytes, raw) uploaded and verified, sha256 ${uploaded.image.status?.sha256 ?? ''}`,
    );
    const provisioning = labProvisioning(activeLab.namespace, labCluster, imageName);
    const objects = KubernetesObjectApi.makeApiClient(kubeConfig);
    const goal = onNode ? 'Ready' : 'JobLaunched';
    const readyProvisioning = await withTimeout(
      'provision the cluster',
      timeouts.provisioning,
      (async () => {
        await applyObject(objects, provisioning);
        return followConditions({
          kubeConfig,
          resource: provisioningsResource,
          namespace: activeLab.namespace,
          name: labCluster,
          what: `Provisioning ${labCluster} to be ${goal}`,
          timeoutMs: timeouts.provisioning,
          onCondition: (condition) => reportCondition(out, condition),
          until: (object) => {
            const failed = object.status?.conditions?.find(
              (c) => c.status === 'False' && c.type !== 'Ready' && observed(c, object),
            );
            if (failed)
              throw new StepFailure(
                'provision the cluster',
                `${failed.type}: ${failed.message ?? failed.reason}`,
              );
            return conditionTrue(object, goal) ? object : undefined;
          },
        });
      })(),
    ).catch(async (error: unknown) => {
      if (onNode) await showKudLogs(out, kubeConfig, shippedFunctionsNamespace);
      throw error;
    });
    const nodes = (readyProvisioning.status?.nodes ?? []) as ResolvedNode[];
    for (const line of table([
      ['node', 'roles', 'MAC', 'IP', 'IP source'],
      ...nodes.map((n) => [n.label, n.roles.join(','), n.mac, n.ip, n.source]),
    ]))
      out.info(line);
    await showHostImages(
      out,
      kubeConfig,
      activeLab.namespace,
      activeLab.hosts.map((h) => h.bmhName),
    );
    if (onNode) await showKudLogs(out, kubeConfig, shippedFunctionsNamespace);
    const ipConfigMap = await kubeConfig
      .makeApiClient(CoreV1Api)
      .readNamespacedConfigMap({ name: `${labCluster}-configmap`, namespace: activeLab.namespace })
      .catch(() => undefined);
    if (ipConfigMap)
      out.ok(
        `ConfigMap ${labCluster}-configmap: ${Object.entries(ipConfigMap.data ?? {})
          .map(([k, v]) => `${k}=${v}`)
          .join(' ')}`,
      );

    // 5. Software → installed on every host.
    const software = labSoftware(activeLab.namespace);
    const softwareName = software.metadata!.name!;
    let hosts: HostResult[] = [];
    if (!onNode) {
      out.step(5, totalSteps, `Software ${activeLab.namespace}/${softwareName}: skipped`);
      out.info('without a node the KUD Job never runs, so the cluster is never Ready for software');
    } else {
      out.step(5, totalSteps, `Apply Software ${activeLab.namespace}/${softwareName}`);
      const installedSoftware = await withTimeout(
        'install the software',
        timeouts.software,
        (async () => {
          await applyObject(objects, software);
          return followConditions({
            kubeConfig,
            resource: softwaresResource,
            namespace: activeLab.namespace,
            name: softwareName,
            what: `Software ${softwareName} to be Ready`,
            timeoutMs: timeouts.software,
            onCondition: (condition) => reportCondition(out, condition),
            until: (object) => {
              const failed = object.status?.conditions?.find(
                (c) => c.type === 'Installed' && c.status === 'False' && observed(c, object),
              );
              if (failed)
                throw new StepFailure(
                  'install the software',
                  `Installed: ${failed.message ?? failed.reason}`,
                );
              return conditionTrue(object, 'Ready') ? object : undefined;
            },
          });
        })(),
      );
      hosts = (installedSoftware.status?.hosts ?? []) as HostResult[];
      for (const line of table([
        ['node', 'IP', 'packages', 'exit', 'time'],
        ...hosts.map((h) => [
          h.node,
          h.ip,
          h.packages.join(' '),
          String(h.exitCode ?? '-'),
          `${Math.round(h.durationMs)} ms`,
        ]),
      ]))
        out.info(line);
      const aptCommands = activeLab.commands().filter((c) => c.command.includes('apt-get'));
      out.dim(
        `${aptCommands.length} apt-get commands reached the ${activeLab.sshKind === 'openssh' ? 'sshd' : 'simulated'} hosts (recorded, not run), e.g. ${aptCommands[0]?.command ?? '(none)'}`,
      );
    }

    finished = true;
    out.step(6, totalSteps, 'Summary');
    if (onNode) {
      out.ok(
        `cluster ${labCluster}: ${nodes.length} nodes resolved, inventory rendered, KUD Job complete (run on the node), Ready`,
      );
      out.ok(
        `software ${softwareName}: installed on ${hosts.filter((h) => h.exitCode === 0).length}/${hosts.length} hosts`,
      );
    } else {
      out.ok(`cluster ${labCluster}: ${nodes.length} nodes resolved, inventory rendered, KUD Job launched`);
      out.info(
        'run as root (the node needs network namespaces) to see the Job run and the software installed',
      );
    }
    out.info(`done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    out.line();
    out.line('Next: `bpa dev` runs the same stack and stays up; apply your own resources with kubectl and');
    out.line(
      'watch them in the live view. `bpa render --provisioning FILE` shows an inventory without a cluster.',
    );
    if (options.keepUntil) {
      out.line(`\nThe stack stays up (${stack.watchHint}); Ctrl-C stops it.`);
      await options.keepUntil();
    }
    return { ok: true };
  } catch (error) {
    finished = true;
    const step = error instanceof StepFailure ? error.step : 'the demo';
    const message = describeError(error).message;
    out.line();
    out.fail(`step failed: ${step}: ${message}`);
    if (stack?.logFilePath) out.info(`logs: ${stack.logFilePath}`);
    return { ok: false, failedStep: step, message };
  } finally {
    await images?.stop().catch(() => undefined);
    await stack?.stop().catch(() => undefined);
    await lab?.stop().catch(() => undefined);
    await cluster?.stop().catch(() => undefined);
  }
}

/** Each lab host's spec.image, as host-lookup wrote it from the Image the Provisioning names. */
async function showHostImages(
  out: DemoOutput,
  kubeConfig: Stack['kubeConfig'],
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
async function showKudLogs(out: DemoOutput, kubeConfig: Stack['kubeConfig'], namespace: string) {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const jobName = kudJobName(labCluster);
  try {
    const pods = await core.listNamespacedPod({ namespace, labelSelector: `job-name=${jobName}` });
    const pod = pods.items.at(-1)?.metadata?.name;
    if (!pod) return;
    const text = await core.readNamespacedPodLog({ name: pod, namespace, container: 'kud' });
    out.dim(`kubectl logs ${pod} (the KUD installer stand-in):`);
    for (const line of String(text).trimEnd().split('\n')) out.dim(`  ${line}`);
  } catch (error) {
    out.dim(`no logs of Job ${jobName}: ${describeError(error).message}`);
  }
}

function reportCondition(out: DemoOutput, condition: Condition): void {
  const text = `${condition.type}=${condition.status}  ${condition.reason ?? ''}${condition.message ? `: ${condition.message}` : ''}`;
  if (condition.status === 'True') out.ok(text);
  else if (condition.status === 'False') out.fail(text);
  else out.info(`… ${text}`);
}
