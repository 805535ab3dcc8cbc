import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Pod, V1PodCondition, V1PodStatus } from '@kubernetes/client-node';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { describeError } from '../../shared/errors.js';
import { isStatus } from '../control-plane/apply.js';
import type { ContainerSandbox } from './container-runner.js';
import { ContainerRunner } from './container-runner.js';
import { lookupImage, unmappedImageMessage } from './image-map.js';
import type { PodSandbox } from './network.js';
import type { NodeContext } from './node-context.js';
import { kubeTime } from './node-context.js';
import { preparePodVolumes } from './volumes.js';

type Phase = 'Pending' | 'Running' | 'Succeeded' | 'Failed';

/**
 * The kubelet's pod worker, for one pod bound to this node: sandbox (network namespace and IP, or
 * the node's namespace for hostNetwork), volumes, init containers in order, then the containers;
 * it writes the pod's status (phase, conditions, container statuses) as things change, honours
 * activeDeadlineSeconds, and on graceful deletion stops the containers (SIGTERM, grace period,
 * SIGKILL), writes the terminal status and deletes the pod with grace 0.
 */
export class PodWorker {
  private pod: V1Pod;
  private readonly podDir: string;
  private readonly initRunners: ContainerRunner[];
  private readonly runners: ContainerRunner[];
  private sandbox: PodSandbox | undefined;
  private podIP: string | undefined;
  private readonly startTime = kubeTime();
  private phase: Phase = 'Pending';
  private reason: string | undefined;
  private message: string | undefined;
  private initialized = false;
  private readonly transitions = new Map<string, { status: string; time: string }>();
  private statusDirty = false;
  private statusWrite: Promise<void> | undefined;
  private terminating: Promise<void> | undefined;
  private deadlineTimer: NodeJS.Timeout | undefined;
  private gone = false;
  readonly uid: string;

  constructor(
    private readonly node: NodeContext,
    pod: V1Pod,
  ) {
    this.pod = pod;
    this.uid = pod.metadata?.uid ?? '';
    this.podDir = join(node.podsDir, this.uid);
    const restartPolicy = pod.spec?.restartPolicy ?? 'Always';
    const runner = (init: boolean) => (container: NonNullable<V1Pod['spec']>['containers'][number]) =>
      new ContainerRunner(
        node,
        container,
        init,
        lookupImage(node.imageMap, container.image ?? '') ?? { command: ['/bin/false'], args: [], env: {} },
        // Init containers restart unless the pod's policy is Never.
        init ? (restartPolicy === 'Never' ? 'Never' : 'OnFailure') : restartPolicy,
        () => this.markDirty(),
      );
    this.initRunners = (pod.spec?.initContainers ?? []).map(runner(true));
    this.runners = (pod.spec?.containers ?? []).map(runner(false));
  }

  get key(): string {
    return `${this.pod.metadata?.namespace}/${this.pod.metadata?.name}`;
  }

  /** The log file of a container (its current or previous run), for the log endpoint. */
  logPath(container: string, previous: boolean): { path?: string; running: boolean } | undefined {
    const runner = [...this.initRunners, ...this.runners].find((candidate) => candidate.name === container);
    if (!runner) return undefined;
    return { path: runner.logPath(this.podDir, previous), running: !!runner.state.running };
  }

  containerNames(): string[] {
    return [...this.initRunners, ...this.runners].map((runner) => runner.name);
  }

  start(): void {
    void this.run().catch((error: unknown) => {
      this.node.log('pod worker failed', { pod: this.key, error: describeError(error).message });
    });
  }

  /** A newer version of the pod: graceful deletion starts when deletionTimestamp appears. */
  update(pod: V1Pod): void {
    this.pod = pod;
    if (pod.metadata?.deletionTimestamp && !this.terminating) {
      const graceSeconds =
        pod.metadata.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
      this.terminating = this.terminate(graceSeconds * 1000, { deleteAfter: true }).catch((error: unknown) =>
        this.node.log('pod termination failed', { pod: this.key, error: describeError(error).message }),
      );
    }
  }

  /** The pod object is gone (or the node stops): kill what runs and remove everything local. */
  async remove(graceMs = 0): Promise<void> {
    this.gone = true;
    await Promise.all([...this.initRunners, ...this.runners].map((runner) => runner.terminate(graceMs)));
    clearTimeout(this.deadlineTimer);
    await this.teardownSandbox();
    rmSync(this.podDir, { recursive: true, force: true });
  }

  private async run(): Promise<void> {
    mkdirSync(this.podDir, { recursive: true });
    this.markDirty();
    const unmapped = [...this.initRunners, ...this.runners].filter(
      (runner) => !lookupImage(this.node.imageMap, runner.spec.image ?? ''),
    );
    if (unmapped.length > 0) {
      // Like imagePullPolicy Never with the image absent: wait, saying why, until deleted.
      for (const runner of unmapped)
        runner.setWaiting('ErrImageNeverPull', unmappedImageMessage(runner.spec.image ?? ''));
      return;
    }
    const deadline = this.pod.spec?.activeDeadlineSeconds;
    if (deadline !== undefined) {
      this.deadlineTimer = setTimeout(() => void this.deadlineExceeded(), deadline * 1000);
      this.deadlineTimer.unref();
    }
    const sandbox = await this.prepareSandbox();
    if (!sandbox) return;
    for (const runner of this.initRunners) {
      await runner.run(sandbox);
      if (this.gone || this.terminating) return;
      if (!runner.succeeded) {
        // A failed init container with restartPolicy Never fails the pod.
        return this.finish();
      }
    }
    this.initialized = true;
    this.markDirty();
    await Promise.all(this.runners.map((runner) => runner.run(sandbox)));
    if (!this.gone && !this.terminating) await this.finish();
  }

  private async prepareSandbox(): Promise<ContainerSandbox | undefined> {
    const hostNetwork = this.pod.spec?.hostNetwork ?? false;
    const name = this.pod.metadata?.name ?? 'pod';
    const hostname = hostNetwork ? this.node.nodeName : (this.pod.spec?.hostname ?? name).slice(0, 63);
    for (;;) {
      if (this.gone || this.terminating) return undefined;
      try {
        if (!this.sandbox) {
          this.sandbox = hostNetwork
            ? { netns: this.node.network.slot.nodeNetns, ip: this.node.network.nodeIp }
            : await this.node.network.createPodSandbox(hostname, this.pod.metadata?.namespace ?? 'default');
          this.podIP = this.sandbox.ip;
          this.markDirty();
        }
        const volumes = await preparePodVolumes({
          core: this.node.core,
          pod: this.pod,
          podIP: this.sandbox.ip,
          hostIP: this.node.hostIP,
          podDir: this.podDir,
          hostPathRoot: this.node.hostPathRoot,
        });
        return {
          pod: this.pod,
          netns: this.sandbox.netns,
          podIP: this.sandbox.ip,
          hostname,
          podDir: this.podDir,
          volumes,
        };
      } catch (error) {
        const { reason, message } = describeError(error);
        this.node.log('pod sandbox not ready', { pod: this.key, reason, error: message });
        for (const runner of [...this.initRunners, ...this.runners])
          runner.setWaiting('ContainerCreating', message);
        await new Promise((resolve) => setTimeout(resolve, 2000));
      }
    }
  }

  private async deadlineExceeded(): Promise<void> {
    if (this.terminating || this.isTerminal()) return;
    this.reason = 'DeadlineExceeded';
    this.message = 'Pod was active on the node longer than the specified deadline';
    this.terminating = this.terminate((this.pod.spec?.terminationGracePeriodSeconds ?? 30) * 1000, {
      deleteAfter: false,
      phase: 'Failed',
    }).catch((error: unknown) =>
      this.node.log('pod termination failed', { pod: this.key, error: describeError(error).message }),
    );
  }

  private async terminate(graceMs: number, options: { deleteAfter: boolean; phase?: Phase }): Promise<void> {
    clearTimeout(this.deadlineTimer);
    await Promise.all([...this.initRunners, ...this.runners].map((runner) => runner.terminate(graceMs)));
    await this.finish(options.phase);
    this.node.log('pod terminated', { pod: this.key, phase: this.phase, delete: options.deleteAfter });
    if (options.deleteAfter && !this.gone) await this.deleteFromApi();
  }

  /**
   * Deletes the pod with grace 0, as the kubelet's status manager does once the containers are
   * gone. On a pod already being deleted with a longer grace period, the first call only shortens
   * it to 0 (graceful deletion still pending); the next one removes the object, so it repeats.
   */
  private async deleteFromApi(): Promise<void> {
    const name = this.pod.metadata?.name ?? '';
    const namespace = this.pod.metadata?.namespace ?? '';
    for (let attempt = 0; attempt < 5 && !this.gone; attempt++) {
      try {
        await this.node.core.deleteNamespacedPod({
          name,
          namespace,
          // With a body, kube-apiserver reads the options from it only (query parameters are ignored).
          body: { gracePeriodSeconds: 0, preconditions: { uid: this.uid } },
        });
        await this.node.core.readNamespacedPod({ name, namespace });
      } catch (error) {
        // 404: gone; 409: the name now belongs to another pod.
        if (isStatus(error, 404) || isStatus(error, 409)) return;
        throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, 100 * (attempt + 1)));
    }
  }

  /** Terminal phase: from the containers' exits (or forced), then the sandbox goes. */
  private async finish(forced?: Phase): Promise<void> {
    if (!this.isTerminal()) {
      const runners =
        this.runners.length > 0 && this.initialized ? this.runners : [...this.initRunners, ...this.runners];
      const allSucceeded = runners.every((runner) => runner.state.terminated?.exitCode === 0);
      this.phase = forced ?? (allSucceeded && this.initialized ? 'Succeeded' : 'Failed');
    }
    this.markDirty();
    await this.flushStatus();
    await this.teardownSandbox();
  }

  private isTerminal(): boolean {
    return this.phase === 'Succeeded' || this.phase === 'Failed';
  }

  private async teardownSandbox(): Promise<void> {
    const sandbox = this.sandbox;
    this.sandbox = undefined;
    if (sandbox?.hostVeth) await this.node.network.deletePodSandbox(sandbox);
  }

  private currentPhase(): Phase {
    if (this.isTerminal()) return this.phase;
    const running = this.runners.some((runner) => runner.state.running || runner.lastState.terminated);
    return this.initialized && running ? 'Running' : 'Pending';
  }

  private condition(type: string, ok: boolean, reason?: string, message?: string): V1PodCondition {
    const status = ok ? 'True' : 'False';
    const previous = this.transitions.get(type);
    const time = previous && previous.status === status ? previous.time : kubeTime();
    this.transitions.set(type, { status, time });
    return {
      type,
      status,
      lastTransitionTime: time as unknown as Date,
      lastProbeTime: null as unknown as Date,
      ...(ok ? {} : { reason, message }),
    };
  }

  private buildStatus(): V1PodStatus {
    const phase = this.currentPhase();
    const terminal = phase === 'Succeeded' || phase === 'Failed';
    const unready = this.runners.filter((runner) => !runner.ready).map((runner) => runner.name);
    const containersReady = !terminal && unready.length === 0 && this.initialized;
    const notReadyMessage = `containers with unready status: [${unready.join(' ')}]`;
    const pendingInit = this.initRunners.filter((runner) => !runner.succeeded).map((runner) => runner.name);
    const hostIPs = [{ ip: this.node.hostIP }];
    return {
      phase,
      ...(this.reason ? { reason: this.reason, message: this.message } : {}),
      hostIP: this.node.hostIP,
      hostIPs,
      ...(this.podIP ? { podIP: this.podIP, podIPs: [{ ip: this.podIP }] } : {}),
      startTime: this.startTime as unknown as Date,
      conditions: [
        this.condition('PodReadyToStartContainers', !!this.podIP && !terminal),
        this.condition(
          'Initialized',
          this.initialized || pendingInit.length === 0,
          'ContainersNotInitialized',
          `containers with incomplete status: [${pendingInit.join(' ')}]`,
        ),
        this.condition(
          'ContainersReady',
          containersReady,
          terminal ? 'PodCompleted' : 'ContainersNotReady',
          terminal ? '' : notReadyMessage,
        ),
        this.condition(
          'Ready',
          containersReady,
          terminal ? 'PodCompleted' : 'ContainersNotReady',
          terminal ? '' : notReadyMessage,
        ),
      ],
      ...(this.initRunners.length > 0
        ? { initContainerStatuses: this.initRunners.map((runner) => runner.status()) }
        : {}),
      containerStatuses: this.runners.map((runner) => runner.status()),
    };
  }

  private markDirty(): void {
    this.statusDirty = true;
    if (!this.statusWrite) this.statusWrite = this.writeStatusLoop();
  }

  private async flushStatus(): Promise<void> {
    while (this.statusWrite) await this.statusWrite;
  }

  private async writeStatusLoop(): Promise<void> {
    // markDirty assigns this.statusWrite only after this returns its promise: yield first, so
    // that the finally below clears it after that assignment even when there is nothing to write
    // (a pod already gone). Otherwise flushStatus awaits a settled promise forever, a microtask
    // loop that starves the whole process (timers, I/O, signals).
    await Promise.resolve();
    try {
      while (this.statusDirty && !this.gone) {
        this.statusDirty = false;
        // Let a burst of changes settle into one write.
        await new Promise((resolve) => setTimeout(resolve, 20));
        const status = this.buildStatus();
        try {
          await this.node.core.patchNamespacedPodStatus(
            {
              name: this.pod.metadata?.name ?? '',
              namespace: this.pod.metadata?.namespace ?? '',
              body: { status },
            },
            setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
          );
        } catch (error) {
          if (isStatus(error, 404)) return;
          this.node.log('pod status write failed; retrying', {
            pod: this.key,
            error: describeError(error).message,
          });
          this.statusDirty = true;
          await new Promise((resolve) => setTimeout(resolve, 1000));
        }
      }
    } finally {
      this.statusWrite = undefined;
    }
  }
}
