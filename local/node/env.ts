import type { CoreV1Api, V1Container, V1EnvVar, V1ObjectFieldSelector, V1Pod } from '@kubernetes/client-node';
import { isStatus } from '../control-plane/apply.js';
import { containerConfigError } from './pod-errors.js';

/** What the environment of a container may refer to besides the API objects. */
export interface EnvContext {
  core: CoreV1Api;
  pod: V1Pod;
  podIP: string;
  hostIP: string;
  /** KUBERNETES_SERVICE_HOST and friends, and the Service links of the pod's namespace. */
  serviceEnv: Record<string, string>;
  /** For resourceFieldRef limits without a value in the spec. */
  nodeCapacity: { cpu: string; memory: string };
}

/**
 * The value of a downward-API field path (env fieldRef and downwardAPI volume items), as the
 * kubelet supports them.
 */
export function podFieldValue(
  selector: V1ObjectFieldSelector,
  pod: V1Pod,
  podIP: string,
  hostIP: string,
): string {
  const path = selector.fieldPath;
  const meta = pod.metadata ?? {};
  const keyed = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(path);
  if (keyed) return (keyed[1] === 'labels' ? meta.labels : meta.annotations)?.[keyed[2] ?? ''] ?? '';
  const mapText = (map: Record<string, string> | undefined) =>
    Object.entries(map ?? {})
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([key, value]) => `${key}=${JSON.stringify(value)}`)
      .join('\n');
  switch (path) {
    case 'metadata.name':
      return meta.name ?? '';
    case 'metadata.namespace':
      return meta.namespace ?? '';
    case 'metadata.uid':
      return meta.uid ?? '';
    case 'metadata.labels':
      return mapText(meta.labels);
    case 'metadata.annotations':
      return mapText(meta.annotations);
    case 'spec.nodeName':
      return pod.spec?.nodeName ?? '';
    case 'spec.serviceAccountName':
      return pod.spec?.serviceAccountName ?? 'default';
    case 'status.podIP':
    case 'status.podIPs':
      return podIP;
    case 'status.hostIP':
    case 'status.hostIPs':
      return hostIP;
    default:
      throw containerConfigError(`unsupported fieldPath ${JSON.stringify(path)}`);
  }
}

/** Kubernetes' $(VAR) expansion: defined names are replaced, $$ escapes, unknown ones stay. */
export function expandReferences(text: string, lookup: (name: string) => string | undefined): string {
  return text.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (match, name: string | undefined) => {
    if (match === '$$') return '$';
    return (name !== undefined ? lookup(name) : undefined) ?? match;
  });
}

type Source = { name?: string; optional?: boolean };

async function readData(
  context: EnvContext,
  kind: 'configmap' | 'secret',
  source: Source,
): Promise<Record<string, string> | undefined> {
  const namespace = context.pod.metadata?.namespace ?? 'default';
  const name = source.name ?? '';
  try {
    if (kind === 'configmap') {
      const configMap = await context.core.readNamespacedConfigMap({ name, namespace });
      return configMap.data ?? {};
    }
    const secret = await context.core.readNamespacedSecret({ name, namespace });
    return Object.fromEntries(
      Object.entries(secret.data ?? {}).map(([key, value]) => [
        key,
        Buffer.from(value, 'base64').toString('utf8'),
      ]),
    );
  } catch (error) {
    if (!isStatus(error, 404)) throw error;
    if (source.optional) return undefined;
    throw containerConfigError(`${kind} "${name}" not found`);
  }
}

async function valueOf(
  context: EnvContext,
  container: V1Container,
  variable: V1EnvVar,
): Promise<string | undefined> {
  const from = variable.valueFrom;
  if (!from) return variable.value ?? '';
  if (from.fieldRef) return podFieldValue(from.fieldRef, context.pod, context.podIP, context.hostIP);
  for (const [kind, ref] of [
    ['configmap', from.configMapKeyRef],
    ['secret', from.secretKeyRef],
  ] as const) {
    if (!ref) continue;
    const data = await readData(context, kind, ref);
    if (data === undefined) return undefined;
    if (!(ref.key in data)) {
      if (ref.optional) return undefined;
      throw containerConfigError(
        `couldn't find key ${ref.key} in ${kind === 'configmap' ? 'ConfigMap' : 'Secret'} ${context.pod.metadata?.namespace}/${ref.name}`,
      );
    }
    return data[ref.key];
  }
  if (from.resourceFieldRef) {
    const [group, resource] = from.resourceFieldRef.resource.split('.') as ['limits' | 'requests', string];
    const value = container.resources?.[group]?.[resource];
    if (value !== undefined) return String(value);
    return resource === 'cpu'
      ? context.nodeCapacity.cpu
      : resource === 'memory'
        ? context.nodeCapacity.memory
        : '0';
  }
  throw containerConfigError(`env ${variable.name}: unsupported valueFrom`);
}

/**
 * The container's environment as the kubelet builds it: image env, the service variables, envFrom
 * (in order, with prefix), then env (in order, $(VAR) expanded against what came before).
 */
export async function containerEnvironment(
  context: EnvContext,
  container: V1Container,
  imageEnv: Record<string, string>,
): Promise<Record<string, string>> {
  const env: Record<string, string> = { ...imageEnv, ...context.serviceEnv };
  for (const source of container.envFrom ?? []) {
    const [kind, ref] = source.configMapRef
      ? (['configmap', source.configMapRef] as const)
      : (['secret', source.secretRef ?? {}] as const);
    const data = await readData(context, kind, ref);
    for (const [key, value] of Object.entries(data ?? {})) env[`${source.prefix ?? ''}${key}`] = value;
  }
  for (const variable of container.env ?? []) {
    const value = await valueOf(context, container, variable);
    if (value === undefined) continue;
    env[variable.name] = variable.valueFrom ? value : expandReferences(value, (name) => env[name]);
  }
  return env;
}
