import { join } from 'node:path';
import type {
  V1Container,
  V1ContainerState,
  V1ContainerStatus,
  V1Pod,
  V1Probe,
} from '@kubernetes/client-node';
import { describeError } from '../../shared/errors.js';
import type { RunningProcess } from './container-process.js';
import { startContainerProcess } from './container-process.js';
import { containerEnvironment, expandReferences } from './env.js';
import type { ImageEntry } from './image-map.js';
import type { NodeContext } from './node-context.js';
import { kubeTime } from './node-context.js';
import { ProbeLoop } from './probes.js';
import type { PreparedVolume } from './volumes.js';
import { safeJoin } from './volumes.js';

/** Where a container's processes run: the pod's sandbox as the worker prepared it. */
export interface ContainerSandbox {
  pod: V1Pod;
  netns: string;
  podIP: string;
  hostname: string;
  podDir: string;
  volumes: Map<string, PreparedVolume>;
}

const backoffStartMs = 10_000;
const backoffCapMs = 300_000;
/** A container that ran this long before it exited restarts without back-off (as the kubelet resets it). */
const backoffResetMs = 600_000;

/**
 * One container's life on the node: start, probes, exit, and restarts by the pod's
 * restartPolicy with the kubelet's back-off (10 s doubling to 5 min; CrashLoopBackOff while
 * waiting). Its status is a V1ContainerStatus the worker writes as is.
 */
export class ContainerRunner {
  restartCount = 0;
  state: V1ContainerState;
  lastState: V1ContainerState = {};
  ready = false;
  started = false;
  /** No more restarts will happen: the container's final state is its state. */
  done = false;
  private process: RunningProcess | undefined;
  private probes: ProbeLoop[] = [];
  private stopping = false;
  private wake: (() => void) | undefined;
  private containerID: string | undefined;
  private probeRuns = 0;

  constructor(
    private readonly node: NodeContext,
    readonly spec: V1Container,
    readonly init: boolean,
    private readonly image: ImageEntry,
    private readonly restartPolicy: string,
    private readonly onChange: () => void,
  ) {
    this.state = { waiting: { reason: init ? 'PodInitializing' : 'ContainerCreating' } };
  }

  get name(): string {
    return this.spec.name;
  }

  get succeeded(): boolean {
    return this.done && this.state.terminated?.exitCode === 0;
  }

  logPath(podDir: string, previous = false): string | undefined {
    const attempt = previous ? this.restartCount - 1 : this.restartCount;
    return attempt < 0 ? undefined : join(podDir, 'logs', this.name, `${attempt}.log`);
  }

  status(): V1ContainerStatus {
    return {
      name: this.name,
      image: this.spec.image ?? '',
      imageID: `bpa-node://${this.spec.image ?? ''}`,
      ...(this.containerID ? { containerID: this.containerID } : {}),
      ready: this.ready,
      started: this.started,
      restartCount: this.restartCount,
      state: this.state,
      lastState: this.lastState,
    };
  }

  /** Runs until the container is done (no restart left) or terminate() is called. */
  async run(sandbox: ContainerSandbox): Promise<void> {
    let failuresInRow = 0;
    while (!this.stopping) {
      const startedAt = Date.now();
      const exit = await this.runOnce(sandbox);
      if (!exit) {
        if (this.stopping) break;
        // Could not start (configuration not there yet): try again shortly.
        await this.pause(2000);
        continue;
      }
      if (this.stopping) break;
      const restart =
        this.restartPolicy === 'Always' || (this.restartPolicy === 'OnFailure' && exit.exitCode !== 0);
      if (!restart) break;
      failuresInRow = Date.now() - startedAt > backoffResetMs ? 0 : failuresInRow + 1;
      const delayMs =
        failuresInRow <= 1 ? 0 : Math.min(backoffCapMs, backoffStartMs * 2 ** (failuresInRow - 2));
      this.lastState = this.state;
      this.restartCount++;
      if (delayMs > 0) {
        const pod = sandbox.pod.metadata;
        this.state = {
          waiting: {
            reason: 'CrashLoopBackOff',
            message: `back-off ${delayMs / 1000}s restarting failed container=${this.name} pod=${pod?.name}_${pod?.namespace}(${pod?.uid})`,
          },
        };
        this.onChange();
        await this.pause(delayMs);
      }
    }
    this.done = true;
    this.onChange();
  }

  /** SIGTERM to the container's process group, SIGKILL after the grace period; no restart after. */
  async terminate(graceMs: number): Promise<void> {
    this.stopping = true;
    this.wake?.();
    const running = this.process;
    if (!running) return;
    running.signal('SIGTERM');
    const timer = setTimeout(() => running.signal('SIGKILL'), graceMs);
    await running.exited;
    clearTimeout(timer);
  }

  /** Waiting state with a reason, shown until the container starts (ErrImageNeverPull and the like). */
  setWaiting(reason: string, message: string): void {
    this.state = { waiting: { reason, message } };
    this.onChange();
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  private async runOnce(sandbox: ContainerSandbox) {
    const { pod } = sandbox;
    let env: Record<string, string>;
    let mounts;
    try {
      env = await containerEnvironment(
        {
          core: this.node.core,
          pod,
          podIP: sandbox.podIP,
          hostIP: this.node.hostIP,
          serviceEnv: this.node.serviceEnv(
            pod.metadata?.namespace ?? 'default',
            pod.spec?.enableServiceLinks !== false,
          ),
          nodeCapacity: this.node.nodeCapacity,
        },
        this.spec,
        this.image.env,
      );
      mounts = (this.spec.volumeMounts ?? []).map((mount) => {
        const volume = sandbox.volumes.get(mount.name);
        if (!volume) throw new Error(`volumeMount ${mount.name}: the pod has no such volume`);
        const subPath = mount.subPath ? expandReferences(mount.subPath, (name) => env[name]) : '';
        return {
          source: subPath ? safeJoin(volume.source, subPath) : volume.source,
          target: mount.mountPath,
          readOnly: volume.readOnly || (mount.readOnly ?? false),
        };
      });
    } catch (error) {
      const { message } = describeError(error);
      this.setWaiting('CreateContainerConfigError', message);
      return undefined;
    }
    if (this.stopping) return undefined;
    const lookup = (name: string) => env[name];
    const command = this.spec.command ?? this.image.command;
    const args = this.spec.args ?? (this.spec.command ? [] : this.image.args);
    const argv = [...command, ...args].map((part) => expandReferences(part, lookup));
    const attempt = this.restartCount;
    const logPath = this.logPath(sandbox.podDir) ?? '';
    const launch = {
      netns: sandbox.netns,
      hostname: sandbox.hostname,
      mounts,
      workingDir: this.spec.workingDir ?? this.image.workingDir ?? '/',
      argv,
      env,
    };
    const running = startContainerProcess(launch, this.runDir(sandbox, String(attempt)), logPath);
    this.process = running;
    this.containerID = `bpa-node://${pod.metadata?.uid}/${this.name}/${attempt}`;
    const startedAt = kubeTime();
    this.state = { running: { startedAt: startedAt as unknown as Date } };
    this.ready = false;
    this.started = !this.spec.startupProbe;
    this.onChange();
    if (!this.init) this.startProbes(sandbox, launch);
    const exit = await running.exited;
    this.process = undefined;
    for (const probe of this.probes) probe.stop();
    this.probes = [];
    this.ready = false;
    this.state = {
      terminated: {
        exitCode: exit.exitCode,
        reason: exit.exitCode === 0 ? 'Completed' : 'Error',
        ...(exit.signal ? { signal: { SIGKILL: 9, SIGTERM: 15 }[exit.signal as string] } : {}),
        startedAt: startedAt as unknown as Date,
        finishedAt: kubeTime() as unknown as Date,
        containerID: this.containerID,
      },
    };
    this.onChange();
    return exit;
  }

  private startProbes(sandbox: ContainerSandbox, launch: Parameters<typeof startContainerProcess>[0]): void {
    const target = {
      podIP: sandbox.podIP,
      container: this.spec,
      exec: async (argv: string[], timeoutMs: number) => {
        const probeRun = startContainerProcess(
          { ...launch, argv },
          this.runDir(sandbox, `probe-${++this.probeRuns}`),
          join(sandbox.podDir, 'logs', `${this.name}.probe.log`),
        );
        const timer = setTimeout(() => probeRun.signal('SIGKILL'), timeoutMs);
        const { exitCode } = await probeRun.exited;
        clearTimeout(timer);
        return exitCode;
      },
    };
    // The probe's own terminationGracePeriodSeconds, else the pod's (as the kubelet does).
    const graceMs = (probe: V1Probe | undefined) =>
      (probe?.terminationGracePeriodSeconds ?? sandbox.pod.spec?.terminationGracePeriodSeconds ?? 30) * 1000;
    const readiness = () => {
      if (this.spec.readinessProbe) {
        this.add(
          new ProbeLoop('readiness', this.spec.readinessProbe, target, (passing) => this.setReady(passing)),
        );
      } else this.setReady(true);
    };
    const liveness = () => {
      if (!this.spec.livenessProbe) return;
      this.add(
        new ProbeLoop('liveness', this.spec.livenessProbe, target, (passing) => {
          if (!passing) this.kill('liveness probe failed', graceMs(this.spec.livenessProbe));
        }),
      );
    };
    if (this.spec.startupProbe) {
      this.add(
        new ProbeLoop('startup', this.spec.startupProbe, target, (passing) => {
          if (!passing) return this.kill('startup probe failed', graceMs(this.spec.startupProbe));
          this.started = true;
          this.onChange();
          readiness();
          liveness();
        }),
      );
    } else {
      readiness();
      liveness();
    }
  }

  /** A run's own directory on tmpfs (its overlay layers and launcher). */
  private runDir(sandbox: ContainerSandbox, run: string): string {
    return join(this.node.runsDir, sandbox.pod.metadata?.uid ?? 'pod', this.name, run);
  }

  private add(probe: ProbeLoop): void {
    this.probes.push(probe);
    probe.start();
  }

  private setReady(ready: boolean): void {
    if (this.ready === ready || !this.process) return;
    this.ready = ready;
    this.onChange();
  }

  /** A failed liveness/startup probe: the kubelet kills the container, restartPolicy decides the rest. */
  private kill(why: string, graceMs: number): void {
    const running = this.process;
    if (!running) return;
    this.node.log(`container ${this.name}: ${why}; killing it`);
    running.signal('SIGTERM');
    const timer = setTimeout(() => running.signal('SIGKILL'), graceMs);
    void running.exited.then(() => clearTimeout(timer));
  }
}
