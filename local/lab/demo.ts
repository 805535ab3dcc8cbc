import { CoreV1Api, KubernetesObjectApi } from '@kubernetes/client-node';
import type { DeliveryRecord } from '../broker/index.js';
import { applyObject } from '../control-plane/apply.js';
import { startStack, type Stack } from '../stack.js';
import { shortEventType } from '../stack/delivery-line.js';
import { provisioningsResource, softwaresResource } from '../../shared/k8s/resources.js';
import type { Condition } from '../../shared/schemas/kube.js';
import type { HostResult } from '../../shared/events/types.js';
import type { ResolvedNode } from '../../shared/schemas/node.js';
import type { DemoOutput } from './demo-output.js';
import { followConditions, type FollowedObject } from './follow-conditions.js';
import { startSimulatedJobController, type SimulatedJobController } from './job-controller.js';
import { labCluster, labProvisioning, labSoftware } from './lab-definition.js';
import { startLab, type Lab } from './lab.js';
import { describeError } from '../../shared/errors.js';

export interface DemoOptions {
  out: DemoOutput;
  /** Broker port to start from (default 8080, or the next free one). */
  port?: number;
  /** Show one line per event delivery. Default true. */
  showEvents?: boolean;
  /** Per-step budgets in ms. */
  timeouts?: Partial<Record<'stack' | 'lab' | 'provisioning' | 'software', number>>;
  /** Keep the stack running after the summary until this resolves (bpa demo --keep). */
  keepUntil?: (stack: Stack) => Promise<void>;
}

export interface DemoResult {
  ok: boolean;
  /** The step that failed, when one did. */
  failedStep?: string;
  message?: string;
}

const defaultTimeouts = { stack: 300_000, lab: 60_000, provisioning: 180_000, software: 180_000 };
const totalSteps = 5;

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
 * `bpa demo`: the embedded stack plus the simulated lab, one Provisioning and one Software
 * through the whole chain, every step shown as it happens. Never throws: the result names
 * the step that failed.
 */
export async function runDemo(options: DemoOptions): Promise<DemoResult> {
  const { out } = options;
  const timeouts = { ...defaultTimeouts, ...options.timeouts };
  const started = Date.now();
  let lab: Lab | undefined;
  let stack: Stack | undefined;
  let jobController: SimulatedJobController | undefined;
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
  out.line(
    'The lab is simulated: BareMetalHosts, a DHCP lease file and SSH servers on 127.0.0.N in this process.',
  );

  try {
    // 1. Lab files first: the functions' env points at them.
    out.step(1, totalSteps, 'Prepare the simulated lab');
    lab = await withTimeout('prepare the simulated lab', timeouts.lab, startLab());
    for (const line of table([
      ['host', 'node', 'MAC', 'IP', 'IP known from', 'SSH (simulated)'],
      ...lab.hosts.map((h) => [
        h.bmhName,
        h.label,
        h.mac,
        h.ip,
        h.inLeaseFile ? 'DHCP lease' : 'inspected NIC',
        `${h.ip}:${lab!.ssh.port}`,
      ]),
    ]))
      out.info(line);
    out.dim(`lease file ${lab.leaseFilePath}, known_hosts ${lab.knownHostsPath}`);

    out.step(2, totalSteps, 'Start the embedded stack');
    out.dim('kube-apiserver + etcd, the embedded Knative broker, local sources, the four functions');
    const activeLab = lab;
    stack = await withTimeout(
      'start the embedded stack',
      timeouts.stack,
      startStack({
        ...(options.port ? { port: options.port } : {}),
        log: (line) => out.dim(line),
        onDelivery: showEvent,
        functionsEnv: activeLab.functionsEnv,
        // The sweep is not needed for a healthy run; keep it quiet unless it is.
        pingIntervalMs: 60_000,
      }),
    );
    out.info(`broker      ${stack.ingressUrl}`);
    out.info(`live view   ${stack.liveViewUrl}   (open it to watch the run)`);
    out.info(`kubeconfig  ${stack.kubeconfigPath}`);
    out.info(`logs        ${stack.logFilePath}`);
    const kubeConfig = stack.kubeConfig;
    await withTimeout('create the lab resources', timeouts.lab, activeLab.applyToCluster(kubeConfig));
    out.ok(
      `namespace ${activeLab.namespace}: ${activeLab.hosts.length} BareMetalHosts (NICs in status), Secret ssh-key-secret`,
    );
    jobController = startSimulatedJobController({
      kubeConfig,
      namespace: activeLab.namespace,
      report: (line) => out.info(`⚙ ${line}`),
      onError: (error) => out.fail(`simulated Job controller: ${describeError(error).message}`),
    });
    out.dim(
      'No kubelet runs here: a simulated Job controller completes the KUD Job the way the real one would.',
    );

    // 3. Provisioning → Ready.
    const provisioning = labProvisioning(activeLab.namespace);
    out.step(3, totalSteps, `Apply Provisioning ${activeLab.namespace}/${labCluster} (2 masters, 1 worker)`);
    const objects = KubernetesObjectApi.makeApiClient(kubeConfig);
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
          what: `Provisioning ${labCluster} to be Ready`,
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
            return conditionTrue(object, 'Ready') ? object : undefined;
          },
        });
      })(),
    );
    const nodes = (readyProvisioning.status?.nodes ?? []) as ResolvedNode[];
    for (const line of table([
      ['node', 'roles', 'MAC', 'IP', 'IP source'],
      ...nodes.map((n) => [n.label, n.roles.join(','), n.mac, n.ip, n.source]),
    ]))
      out.info(line);
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

    // 4. Software → installed on every host.
    const software = labSoftware(activeLab.namespace);
    const softwareName = software.metadata!.name!;
    out.step(4, totalSteps, `Apply Software ${activeLab.namespace}/${softwareName}`);
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
              throw new StepFailure('install the software', `Installed: ${failed.message ?? failed.reason}`);
            return conditionTrue(object, 'Ready') ? object : undefined;
          },
        });
      })(),
    );
    const hosts = (installedSoftware.status?.hosts ?? []) as HostResult[];
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
    const commands = activeLab.ssh.commands();
    out.dim(
      `${commands.length} SSH commands ran on the simulated hosts, e.g. ${commands[0]?.command ?? '(none)'}`,
    );

    finished = true;
    out.step(5, totalSteps, 'Summary');
    out.ok(
      `cluster ${labCluster}: ${nodes.length} nodes resolved, inventory rendered, KUD Job complete, Ready`,
    );
    out.ok(
      `software ${softwareName}: installed on ${hosts.filter((h) => h.exitCode === 0).length}/${hosts.length} hosts`,
    );
    out.info(`done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    out.line();
    out.line('Next: `bpa dev` runs the same stack and stays up; apply your own resources with kubectl and');
    out.line(
      'watch them in the live view. `bpa render --provisioning FILE` shows an inventory without a cluster.',
    );
    if (options.keepUntil) {
      out.line(`\nThe stack stays up (live view ${stack.liveViewUrl}); Ctrl-C stops it.`);
      await options.keepUntil(stack);
    }
    return { ok: true };
  } catch (error) {
    finished = true;
    const step = error instanceof StepFailure ? error.step : 'the demo';
    const message = describeError(error).message;
    out.line();
    out.fail(`step failed: ${step}: ${message}`);
    if (stack) out.info(`logs: ${stack.logFilePath}`);
    return { ok: false, failedStep: step, message };
  } finally {
    jobController?.stop();
    await stack?.stop().catch(() => undefined);
    await lab?.stop().catch(() => undefined);
  }
}

function reportCondition(out: DemoOutput, condition: Condition): void {
  const text = `${condition.type}=${condition.status}  ${condition.reason ?? ''}${condition.message ? `: ${condition.message}` : ''}`;
  if (condition.status === 'True') out.ok(text);
  else if (condition.status === 'False') out.fail(text);
  else out.info(`… ${text}`);
}
