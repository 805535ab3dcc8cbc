import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import type { V1Container, V1Probe } from '@kubernetes/client-node';

/**
 * The kubelet's probes: httpGet (2xx/3xx passes), tcpSocket (a connection passes) and exec (exit
 * 0 passes), with its timing fields and thresholds. A probe runs from the node, against the pod's
 * IP, as the kubelet does.
 */
export type ProbeKind = 'startup' | 'readiness' | 'liveness';

export interface ProbeTarget {
  podIP: string;
  container: V1Container;
  /** Runs `argv` inside the container's namespaces; resolves with its exit code. */
  exec(argv: string[], timeoutMs: number): Promise<number>;
}

function resolvePort(port: number | string, container: V1Container): number {
  if (typeof port === 'number') return port;
  if (/^\d+$/.test(port)) return Number(port);
  const named = container.ports?.find((candidate) => candidate.name === port);
  if (!named) throw new Error(`no container port named ${port}`);
  return named.containerPort;
}

/**
 * The request target of an httpGet probe. The kubelet parses `path` as a URL and sets scheme and
 * host on it, so a path without its leading slash still asks for `/<path>` (Knative's
 * ApiServerSource adapter is probed at `health`): do the same, or the server sees `GET health`.
 */
export function probePath(path: string | undefined): string {
  if (!path) return '/';
  return path.startsWith('/') ? path : `/${path}`;
}

function httpProbe(
  probe: NonNullable<V1Probe['httpGet']>,
  target: ProbeTarget,
  timeoutMs: number,
): Promise<boolean> {
  return new Promise((resolve) => {
    const send = probe.scheme === 'HTTPS' ? httpsRequest : httpRequest;
    const headers = Object.fromEntries(
      (probe.httpHeaders ?? []).map((header) => [header.name, header.value]),
    );
    const req = send(
      {
        host: probe.host || target.podIP,
        port: resolvePort(probe.port as number | string, target.container),
        path: probePath(probe.path),
        method: 'GET',
        headers: { 'user-agent': 'kube-probe/1.36', ...headers },
        timeout: timeoutMs,
        rejectUnauthorized: false,
        agent: false,
      },
      (res) => {
        res.resume();
        const status = res.statusCode ?? 0;
        resolve(status >= 200 && status < 400);
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}

function tcpProbe(
  probe: NonNullable<V1Probe['tcpSocket']>,
  target: ProbeTarget,
  timeoutMs: number,
): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({
      host: probe.host || target.podIP,
      port: resolvePort(probe.port as number | string, target.container),
      timeout: timeoutMs,
    });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(false));
  });
}

/** One attempt of a probe: true when it passes. */
export async function runProbeOnce(probe: V1Probe, target: ProbeTarget): Promise<boolean> {
  const timeoutMs = (probe.timeoutSeconds ?? 1) * 1000;
  try {
    if (probe.httpGet) return await httpProbe(probe.httpGet, target, timeoutMs);
    if (probe.tcpSocket) return await tcpProbe(probe.tcpSocket, target, timeoutMs);
    if (probe.exec?.command) return (await target.exec(probe.exec.command, timeoutMs)) === 0;
  } catch {
    return false;
  }
  return false;
}

/**
 * Runs a probe every periodSeconds after initialDelaySeconds and reports each change of its
 * result once successThreshold or failureThreshold consecutive attempts agree.
 */
export class ProbeLoop {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private successes = 0;
  private failures = 0;
  private result: boolean | undefined;

  constructor(
    readonly kind: ProbeKind,
    private readonly probe: V1Probe,
    private readonly target: ProbeTarget,
    private readonly onResult: (passing: boolean) => void,
  ) {}

  start(): void {
    this.schedule((this.probe.initialDelaySeconds ?? 0) * 1000);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.attempt(), delayMs);
    this.timer.unref();
  }

  private async attempt(): Promise<void> {
    const passed = await runProbeOnce(this.probe, this.target);
    if (this.stopped) return;
    if (passed) {
      this.successes++;
      this.failures = 0;
    } else {
      this.failures++;
      this.successes = 0;
    }
    // Liveness and startup probes need one success; readiness needs successThreshold.
    const successThreshold = this.kind === 'readiness' ? (this.probe.successThreshold ?? 1) : 1;
    const failureThreshold = this.probe.failureThreshold ?? 3;
    if (passed && this.successes >= successThreshold && this.result !== true) {
      this.result = true;
      this.onResult(true);
    } else if (!passed && this.failures >= failureThreshold && this.result !== false) {
      this.result = false;
      this.onResult(false);
    }
    if (this.stopped) return;
    this.schedule((this.probe.periodSeconds ?? 10) * 1000);
  }
}
