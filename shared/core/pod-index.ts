import { isIP } from 'node:net';
import type { Pod } from '../schemas/pod.js';
import {
  networkStatusAnnotations,
  networkStatusSchema,
  virtletRuntime,
  virtletRuntimeAnnotation,
} from '../schemas/pod.js';
import { podConsumerAnnotation } from './host-claim.js';
import { normaliseMac } from './mac.js';

/** A running Virtlet VM found by its MAC. */
export interface VirtletVm {
  /** `<namespace>/<name>` of the pod. */
  pod: string;
  /** `status.podIP`, else the first `ips` value of the network status entry; absent when neither. */
  ip?: string;
  /** Its `bpa.akraino.org/consumer` annotation: the Provisioning that claims it (host-claim.ts). */
  consumer?: string;
  /** The pod's resourceVersion: the precondition of a claim. */
  resourceVersion?: string;
}

/**
 * Running Virtlet VM pods indexed by the MAC of their default network (the network status
 * entry marked `default: true`, else the first entry). Pods that are not Virtlet VMs, not
 * running, or whose annotation is missing or malformed are skipped, never fatal.
 */
export function indexVirtletVmsByMac(pods: readonly Pod[]): Map<string, VirtletVm> {
  const index = new Map<string, VirtletVm>();
  for (const pod of pods) {
    const annotations = pod.metadata.annotations ?? {};
    if (annotations[virtletRuntimeAnnotation] !== virtletRuntime) continue;
    if (pod.status?.phase !== 'Running') continue;
    const entry = defaultNetwork(annotations);
    const mac = entry?.mac ? normaliseMac(entry.mac) : null;
    if (!entry || mac === null) continue;
    const name = pod.metadata.namespace
      ? `${pod.metadata.namespace}/${pod.metadata.name}`
      : pod.metadata.name;
    const ip = [pod.status?.podIP, ...(entry.ips ?? [])]
      .map((candidate) => candidate?.trim())
      .find((candidate) => candidate && isIP(candidate) !== 0);
    const known = index.get(mac);
    // A VM with an IP beats one still waiting for it (e.g. a stale pod with the same MAC).
    if (known && (known.ip !== undefined || ip === undefined)) continue;
    const vm: VirtletVm = ip === undefined ? { pod: name } : { pod: name, ip };
    const consumer = annotations[podConsumerAnnotation];
    if (consumer !== undefined) vm.consumer = consumer;
    if (pod.metadata.resourceVersion !== undefined) vm.resourceVersion = pod.metadata.resourceVersion;
    index.set(mac, vm);
  }
  return index;
}

function defaultNetwork(annotations: Record<string, string>) {
  for (const name of networkStatusAnnotations) {
    const text = annotations[name];
    if (text === undefined) continue;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      continue;
    }
    const parsed = networkStatusSchema.safeParse(json);
    if (!parsed.success || parsed.data.length === 0) continue;
    return parsed.data.find((entry) => entry.default === true) ?? parsed.data[0];
  }
  return undefined;
}
