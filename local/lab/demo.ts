/**
 * `bpa demo`: the whole chain on a lab of machines. With a node, the cluster is the real node
 * (local/kubelet-node: containerd, kubelet, kube-proxy, with the project's images), the lab's
 * hosts are REAL OpenSSH sshd daemons in network namespaces of their own on the node's lab
 * bridge (openssh-hosts.ts, lab-network.ts), and the KUD Job runs the kud-stand-in image (real
 * ansible-playbook, installs nothing: a STAND-IN for KUD). With --engine knative the events go
 * through REAL Knative Eventing (its own code, from images) and the functions run as pods of
 * their images (demo-engine.ts), as `bpa dev --engine knative` runs them. The DHCP lease file is
 * an IMITATION (lease-file.ts: no dhcpd runs). With --no-node the hosts are SIMULATED: addresses
 * with no SSH server (no Job runs there to reach them).
 */
import { CoreV1Api, KubernetesObjectApi } from '@kubernetes/client-node';
import type { DeliveryRecord } from '../broker/index.js';
import { applyObject } from '../control-plane/apply.js';
import { shippedFunctionsNamespace } from '../control-plane/tenant.js';
import { shortEventType } from '../stack/delivery-line.js';
import { describeStackCluster, startStackCluster, type StackCluster } from '../stack/cluster.js';
import { startLocalImageService, type LocalImageService } from '../image-service.js';
import { describeError } from '../../shared/errors.js';
import { provisioningsResource, softwaresResource } from '../../shared/k8s/resources.js';
import type { HostResult } from '../../shared/events/types.js';
import type { ResolvedNode } from '../../shared/schemas/node.js';
import { createLogger } from '../../shared/log.js';
import { demoImageFile, uploadDemoImage } from './demo-image.js';
import type { DemoOutput } from './demo-output.js';
import { startDemoEngine, type DemoStack } from './demo-engine.js';
import { reportCondition, showHostImages, showKudLogs, table } from './demo-report.js';
import { StepFailure, conditionTrue, observed, totalSteps, withTimeout } from './demo-steps.js';
import { followConditions } from './follow-conditions.js';
import { labCluster, labProvisioning, labSoftware } from './lab-definition.js';
import { startLab, type Lab } from './lab.js';

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
  /** Per-step budgets in ms. */
  timeouts?: Partial<
    Record<'cluster' | 'stack' | 'knative' | 'lab' | 'image' | 'provisioning' | 'software', number>
  >;
  /** Keep the stack running after the summary until this resolves (bpa demo --keep). */
  keepUntil?: () => Promise<void>;
  /**
   * The event engine: `embedded` (default) the in-process broker and sources, with the functions
   * in this process; `knative` real Knative Eventing on the real node (local/knative/), its
   * components and the functions as pods from their images. `knative` needs the node.
   */
  engine?: 'embedded' | 'knative';
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
  // Knative's images are built (the first time: 13 images, ~750 MiB) and imported into the node.
  knative: 600_000,
};

/**
 * `bpa demo`: the one-machine cluster (control plane, Kubernetes' controllers, the real node), a
 * lab of three hosts on the node's network (real sshd), the event engine (the embedded stack, or
 * real Knative Eventing with the functions as pods), then one Provisioning and
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
      // Either engine runs on the real node (local/kubelet-node, with the project's images).
      startStackCluster({
        node: options.node ?? true,
        ...(options.kubeconfigOut ? { kubeconfigOut: options.kubeconfigOut } : {}),
      }),
    );
    if (cluster.fallback) out.fail(`${cluster.fallback}; running on the control plane alone (--no-node)`);
    for (const line of describeStackCluster(cluster)) out.info(line);
    const onNode = cluster.kubeletNode !== undefined;

    out.step(2, totalSteps, 'Prepare the lab');
    lab = await withTimeout(
      'prepare the lab',
      timeouts.lab,
      startLab(cluster.nodeNetwork ? { network: cluster.nodeNetwork } : {}),
    );
    out.line(
      lab.sshKind === 'openssh'
        ? "The lab: BareMetalHosts, a DHCP lease file and real OpenSSH sshd hosts, each in its own network namespace on the node's network. Their apt-get is recorded, never run."
        : 'The lab is simulated: BareMetalHosts and a DHCP lease file naming 127.0.0.N; no SSH server (no Job runs without the node).',
    );
    const sshColumn = lab.sshKind === 'openssh' ? 'SSH (OpenSSH sshd)' : 'SSH';
    for (const line of table([
      ['host', 'node', 'MAC', 'IP', 'IP known from', sshColumn],
      ...lab.hosts.map((h) => [
        h.bmhName,
        h.label,
        h.mac,
        h.ip,
        h.inLeaseFile ? 'DHCP lease' : 'inspected NIC',
        lab!.sshKind === 'openssh' ? `${h.ip}:${lab!.sshPort}` : 'none (no node)',
      ]),
    ]))
      out.info(line);
    out.dim(`lease file ${lab.leaseFilePath}, known_hosts ${lab.knownHostsPath}`);

    const activeLab = lab;
    stack = await startDemoEngine({
      engine,
      cluster,
      lab: activeLab,
      out,
      timeouts,
      showEvent,
      ...(options.port ? { port: options.port } : {}),
    });
    if (engine === 'embedded')
      await withTimeout('create the lab resources', timeouts.lab, activeLab.applyToCluster(stack.kubeConfig));
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
