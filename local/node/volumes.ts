import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, normalize, resolve, sep } from 'node:path';
import type {
  CoreV1Api,
  V1DownwardAPIVolumeFile,
  V1KeyToPath,
  V1Pod,
  V1ServiceAccountTokenProjection,
  V1Volume,
} from '@kubernetes/client-node';
import { isStatus } from '../control-plane/apply.js';
import { podFieldValue } from './env.js';
import { mountError } from './pod-errors.js';

/**
 * A pod's volumes as directories under its own directory on the node, made before its
 * containers start; the containers get them bind-mounted at their mount paths. hostPath volumes
 * live under the node's own host-path directory, never at the machine's real paths.
 */
export interface VolumeContext {
  core: CoreV1Api;
  pod: V1Pod;
  podIP: string;
  hostIP: string;
  podDir: string;
  /** Where hostPath paths are rooted on this node. */
  hostPathRoot: string;
}

export interface PreparedVolume {
  name: string;
  /** The directory (or file, for some hostPath types) a mount binds. */
  source: string;
  /** ConfigMap, Secret, projected and downwardAPI volumes are read-only, as the kubelet mounts them. */
  readOnly: boolean;
}

/** A relative path that stays below its base (a `..` in an item path is refused). */
export function safeJoin(base: string, relative: string): string {
  const target = resolve(base, normalize(relative));
  if (target !== base && !target.startsWith(base + sep)) {
    throw mountError(`path ${JSON.stringify(relative)} leaves its volume`);
  }
  return target;
}

function writeFile(dir: string, path: string, content: string | Buffer, mode: number): void {
  const target = safeJoin(dir, path);
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, content);
  chmodSync(target, mode);
}

function writeKeys(
  dir: string,
  data: Record<string, Buffer>,
  items: V1KeyToPath[] | undefined,
  defaultMode: number,
  what: string,
  optional: boolean,
): void {
  if (!items) {
    for (const [key, value] of Object.entries(data)) writeFile(dir, key, value, defaultMode);
    return;
  }
  for (const item of items) {
    const value = data[item.key];
    if (value === undefined) {
      if (optional) continue;
      throw mountError(`configuration key "${item.key}" not found in ${what}`);
    }
    writeFile(dir, item.path, value, item.mode ?? defaultMode);
  }
}

async function objectData(
  context: VolumeContext,
  kind: 'ConfigMap' | 'Secret',
  name: string,
  optional: boolean,
): Promise<Record<string, Buffer> | undefined> {
  const namespace = context.pod.metadata?.namespace ?? 'default';
  try {
    if (kind === 'ConfigMap') {
      const configMap = await context.core.readNamespacedConfigMap({ name, namespace });
      return {
        ...Object.fromEntries(
          Object.entries(configMap.data ?? {}).map(([key, value]) => [key, Buffer.from(value)]),
        ),
        ...Object.fromEntries(
          Object.entries(configMap.binaryData ?? {}).map(([key, value]) => [
            key,
            Buffer.from(value, 'base64'),
          ]),
        ),
      };
    }
    const secret = await context.core.readNamespacedSecret({ name, namespace });
    return Object.fromEntries(
      Object.entries(secret.data ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64')]),
    );
  } catch (error) {
    if (!isStatus(error, 404)) throw error;
    if (optional) return undefined;
    throw mountError(`${kind.toLowerCase()} "${name}" not found`);
  }
}

/** A bound token from the TokenRequest API, as the kubelet requests it for projected volumes. */
async function serviceAccountToken(
  context: VolumeContext,
  projection: V1ServiceAccountTokenProjection,
): Promise<string> {
  const pod = context.pod;
  const request = await context.core.createNamespacedServiceAccountToken({
    name: pod.spec?.serviceAccountName ?? 'default',
    namespace: pod.metadata?.namespace ?? 'default',
    body: {
      spec: {
        audiences: projection.audience ? [projection.audience] : [],
        expirationSeconds: projection.expirationSeconds ?? 3600,
        boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata?.name, uid: pod.metadata?.uid },
      },
    },
  });
  const token = request.status?.token;
  if (!token) throw mountError('the TokenRequest API returned no token');
  return token;
}

function writeDownwardApi(
  context: VolumeContext,
  dir: string,
  items: V1DownwardAPIVolumeFile[],
  defaultMode: number,
) {
  for (const item of items) {
    if (!item.fieldRef) throw mountError(`downwardAPI item ${item.path}: only fieldRef is supported`);
    writeFile(
      dir,
      item.path,
      podFieldValue(item.fieldRef, context.pod, context.podIP, context.hostIP),
      item.mode ?? defaultMode,
    );
  }
}

async function prepareVolume(context: VolumeContext, volume: V1Volume): Promise<PreparedVolume> {
  const dir = join(context.podDir, 'volumes', volume.name);
  const prepared = (readOnly: boolean, source = dir): PreparedVolume => ({
    name: volume.name,
    source,
    readOnly,
  });
  if (volume.hostPath) {
    const source = safeJoin(context.hostPathRoot, volume.hostPath.path.replace(/^\/+/, ''));
    const type = volume.hostPath.type ?? '';
    if (type === 'FileOrCreate') {
      mkdirSync(dirname(source), { recursive: true });
      if (!existsSync(source)) writeFileSync(source, '');
    } else if (type === '' || type === 'DirectoryOrCreate') {
      mkdirSync(source, { recursive: true });
    } else if (!existsSync(source)) {
      throw mountError(`hostPath type check failed: ${volume.hostPath.path} is not a ${type} on this node`);
    }
    return prepared(false, source);
  }
  mkdirSync(dir, { recursive: true });
  if (volume.emptyDir) return prepared(false);
  if (volume.configMap) {
    const optional = volume.configMap.optional ?? false;
    const data = await objectData(context, 'ConfigMap', volume.configMap.name ?? '', optional);
    if (data)
      writeKeys(
        dir,
        data,
        volume.configMap.items,
        volume.configMap.defaultMode ?? 0o644,
        `ConfigMap ${volume.configMap.name}`,
        optional,
      );
    return prepared(true);
  }
  if (volume.secret) {
    const optional = volume.secret.optional ?? false;
    const data = await objectData(context, 'Secret', volume.secret.secretName ?? '', optional);
    if (data)
      writeKeys(
        dir,
        data,
        volume.secret.items,
        volume.secret.defaultMode ?? 0o644,
        `Secret ${volume.secret.secretName}`,
        optional,
      );
    return prepared(true);
  }
  if (volume.downwardAPI) {
    writeDownwardApi(context, dir, volume.downwardAPI.items ?? [], volume.downwardAPI.defaultMode ?? 0o644);
    return prepared(true);
  }
  if (volume.projected) {
    const defaultMode = volume.projected.defaultMode ?? 0o644;
    for (const source of volume.projected.sources ?? []) {
      if (source.serviceAccountToken) {
        const token = await serviceAccountToken(context, source.serviceAccountToken);
        writeFile(dir, source.serviceAccountToken.path, token, defaultMode);
      } else if (source.configMap) {
        const optional = source.configMap.optional ?? false;
        const data = await objectData(context, 'ConfigMap', source.configMap.name ?? '', optional);
        if (data)
          writeKeys(
            dir,
            data,
            source.configMap.items,
            defaultMode,
            `ConfigMap ${source.configMap.name}`,
            optional,
          );
      } else if (source.secret) {
        const optional = source.secret.optional ?? false;
        const data = await objectData(context, 'Secret', source.secret.name ?? '', optional);
        if (data)
          writeKeys(dir, data, source.secret.items, defaultMode, `Secret ${source.secret.name}`, optional);
      } else if (source.downwardAPI) {
        writeDownwardApi(context, dir, source.downwardAPI.items ?? [], defaultMode);
      } else {
        throw mountError(`volume ${volume.name}: unsupported projected source`);
      }
    }
    return prepared(true);
  }
  throw mountError(
    `volume ${volume.name}: this node supports emptyDir, hostPath, configMap, secret, downwardAPI and projected volumes only`,
  );
}

/** Every volume of the pod, prepared; the first failure is thrown (the worker retries). */
export async function preparePodVolumes(context: VolumeContext): Promise<Map<string, PreparedVolume>> {
  const volumes = new Map<string, PreparedVolume>();
  for (const volume of context.pod.spec?.volumes ?? [])
    volumes.set(volume.name, await prepareVolume(context, volume));
  return volumes;
}
