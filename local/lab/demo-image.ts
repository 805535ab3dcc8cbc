import { createHash, randomBytes } from 'node:crypto';
import {
  CoreV1Api,
  KubernetesObjectApi,
  type KubeConfig,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { imageObjectName } from '../../shared/core/image-names.js';
import { kubeClients } from '../../shared/k8s/clients.js';
import { readImage, type StoredImage } from '../../shared/k8s/image.js';
import { applyObject } from '../control-plane/apply.js';
import type { LocalImageService } from '../image-service.js';

/**
 * The demo's OS image: a small generated raw disk (an MBR boot signature and random sectors),
 * uploaded as a client would, with a ServiceAccount token that may write Images in the lab's
 * namespace and nothing else, through tus creation-with-upload (one POST carries the bytes), then
 * verified by image-verify. What `bpa demo` then names in its Provisioning's spec.image.
 */
export const demoImageFile = 'demo-os.img';
const demoImageBytes = 2 * 1024 * 1024;
const uploader = 'demo-image-uploader';

export interface DemoImage {
  image: StoredImage;
  bytes: number;
  sha256: string;
}

/** The generated disk: random sectors, the 0x55AA boot signature at the end of sector 0. */
export function demoDiskImage(bytes = demoImageBytes): Buffer {
  const disk = randomBytes(bytes);
  disk[510] = 0x55;
  disk[511] = 0xaa;
  return disk;
}

/** Uploads the demo image as `cluster`'s OS image in `namespace`; resolves once it is Ready. */
export async function uploadDemoImage(options: {
  kubeConfig: KubeConfig;
  images: LocalImageService;
  namespace: string;
  cluster: string;
  timeoutMs: number;
}): Promise<DemoImage> {
  const { kubeConfig, images, namespace, cluster } = options;
  const token = await uploaderToken(kubeConfig, namespace);
  const disk = demoDiskImage();
  const metadata = { owner: namespace, cluster, type: 'os', name: demoImageFile, format: 'raw' };
  const response = await fetch(images.uploadUrl, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'tus-resumable': '1.0.0',
      'upload-length': String(disk.length),
      'upload-metadata': Object.entries(metadata)
        .map(([key, value]) => `${key} ${Buffer.from(value).toString('base64')}`)
        .join(','),
      'content-type': 'application/offset+octet-stream',
    },
    body: disk,
  });
  const offset = response.headers.get('upload-offset');
  if (response.status !== 201 || offset !== String(disk.length))
    throw new Error(
      `the image upload answered ${response.status} (Upload-Offset ${offset ?? 'none'}): ${await response.text()}`,
    );
  const name = imageObjectName(cluster, 'os', demoImageFile);
  const image = await untilDecided(kubeConfig, namespace, name, options.timeoutMs);
  return { image, bytes: disk.length, sha256: createHash('sha256').update(disk).digest('hex') };
}

/** A ServiceAccount allowed to create, get, update and delete Images in `namespace`, and its token. */
async function uploaderToken(kubeConfig: KubeConfig, namespace: string): Promise<string> {
  const objects = KubernetesObjectApi.makeApiClient(kubeConfig);
  const rbac = 'rbac.authorization.k8s.io/v1';
  const owned: KubernetesObject[] = [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: uploader, namespace } },
    {
      apiVersion: rbac,
      kind: 'Role',
      metadata: { name: uploader, namespace },
      rules: [
        {
          apiGroups: ['bpa.akraino.org'],
          resources: ['images'],
          verbs: ['create', 'get', 'update', 'delete'],
        },
      ],
    } as KubernetesObject,
    {
      apiVersion: rbac,
      kind: 'RoleBinding',
      metadata: { name: uploader, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: uploader },
      subjects: [{ kind: 'ServiceAccount', name: uploader, namespace }],
    } as KubernetesObject,
  ];
  for (const object of owned) await applyObject(objects, object);
  const request = await kubeConfig.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
    name: uploader,
    namespace,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const token = request.status?.token;
  if (!token) throw new Error(`no token for ServiceAccount ${namespace}/${uploader}`);
  return token;
}

/** Polls the Image until image-verify decided (Ready, or Failed: an error). */
async function untilDecided(
  kubeConfig: KubeConfig,
  namespace: string,
  name: string,
  timeoutMs: number,
): Promise<StoredImage> {
  const clients = kubeClients(kubeConfig);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const image = await readImage(clients, namespace, name);
    const phase = image?.status?.phase;
    if (image && phase === 'Ready') return image;
    if (phase === 'Failed') {
      const ready = image?.status?.conditions?.find((c) => c.type === 'Ready');
      throw new Error(
        `Image ${namespace}/${name} failed verification: ${ready?.message ?? ready?.reason ?? ''}`,
      );
    }
    if (Date.now() > deadline)
      throw new Error(`Image ${namespace}/${name} is ${phase ?? 'absent'}, not Ready`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
