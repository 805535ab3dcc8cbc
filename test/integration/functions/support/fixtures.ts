/** Objects the function tests put into the real API server. */
import { CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';

export const bpaGroup = { group: 'bpa.akraino.org', version: 'v1alpha1' } as const;

export interface NodeSpec {
  label: string;
  mac?: string | null;
  /** What the node asks of its host (contract section 14, the preflight): cores, a quantity. */
  cpu?: number;
  memory?: string;
}

/** A Provisioning; `workers` entries with `mac: undefined` are written as `- <label>:` (null). */
export function provisioningObject(options: {
  name: string;
  namespace: string;
  cluster: string;
  clusterType?: string;
  masters: NodeSpec[];
  workers?: NodeSpec[];
  podSubnet?: string;
  kudPlugins?: string[];
}) {
  const entry = ({ label, mac, cpu, memory }: NodeSpec) => ({
    [label]:
      mac === undefined
        ? null
        : {
            'mac-address': mac,
            ...(cpu === undefined ? {} : { cpu }),
            ...(memory === undefined ? {} : { memory }),
          },
  });
  return {
    apiVersion: 'bpa.akraino.org/v1alpha1',
    kind: 'Provisioning',
    metadata: {
      name: options.name,
      namespace: options.namespace,
      labels: {
        cluster: options.cluster,
        ...(options.clusterType ? { 'cluster-type': options.clusterType } : {}),
      },
    },
    spec: {
      masters: options.masters.map(entry),
      ...(options.workers ? { workers: options.workers.map(entry) } : {}),
      ...(options.podSubnet ? { PodSubnet: options.podSubnet } : {}),
      ...(options.kudPlugins ? { KUDPlugins: options.kudPlugins } : {}),
    },
  };
}

export async function createProvisioning(
  kubeConfig: KubeConfig,
  object: ReturnType<typeof provisioningObject>,
) {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  return (await api.createNamespacedCustomObject({
    ...bpaGroup,
    plural: 'provisionings',
    namespace: object.metadata.namespace,
    body: object,
  })) as StoredProvisioning;
}

/** A one-master Provisioning of cluster `name` in `namespace`, as stored (the API's answer). */
export function createOneNodeProvisioning(kubeConfig: KubeConfig, namespace: string, name: string) {
  return createProvisioning(
    kubeConfig,
    provisioningObject({
      name,
      namespace,
      cluster: name,
      masters: [{ label: 'master-0', mac: '52:54:00:00:00:01' }],
    }),
  );
}

/** A Software for `cluster` (its label), as a user creates one. */
export async function createSoftware(
  kubeConfig: KubeConfig,
  namespace: string,
  name: string,
  cluster: string,
  spec: Record<string, unknown> = { masterSoftware: ['htop'], workerSoftware: ['tmux'] },
) {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  return (await api.createNamespacedCustomObject({
    ...bpaGroup,
    plural: 'softwares',
    namespace,
    body: {
      apiVersion: 'bpa.akraino.org/v1alpha1',
      kind: 'Software',
      metadata: { name, namespace, labels: { cluster } },
      spec,
    },
  })) as {
    apiVersion: string;
    kind: string;
    metadata: { name: string; namespace: string; generation: number };
  };
}

/** A status condition as the API server stores it on the project's resources. */
export interface StoredCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  observedGeneration?: number;
}

export interface StoredProvisioning {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; uid: string; generation: number; resourceVersion: string };
  spec: Record<string, unknown>;
  status?: {
    conditions?: StoredCondition[];
    nodes?: { label: string; roles: string[]; mac: string; ip: string; source: string }[];
    jobName?: string;
  };
}

export async function readProvisioning(kubeConfig: KubeConfig, namespace: string, name: string) {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  return (await api.getNamespacedCustomObject({
    ...bpaGroup,
    plural: 'provisionings',
    namespace,
    name,
  })) as StoredProvisioning;
}

export const conditionOf = (object: { status?: StoredProvisioning['status'] }, type: string) =>
  object.status?.conditions?.find((c) => c.type === type);

/**
 * A BareMetalHost with the status Metal3's schema requires; created first, then given its
 * status through the status subresource (a status sent with the object is dropped).
 */
export async function createBareMetalHost(
  kubeConfig: KubeConfig,
  options: {
    name: string;
    namespace: string;
    bootMac: string;
    nics?: { name: string; mac: string; ip: string }[];
    annotations?: Record<string, string>;
    /** Metal3's spec.image: {url, checksum, checksumType, format}. */
    image?: Record<string, string>;
    /**
     * Metal3's status.provisioning.state (default `provisioned`: host-lookup resolves it at once,
     * contract section 13) and, for an error state, errorType with Metal3's errorMessage.
     */
    state?: string;
    error?: { type: string; message: string };
    /** What inspection found: status.hardware.cpu.count and ramMebibytes (the preflight). */
    hardware?: { cpus?: number; ramMebibytes?: number };
  },
) {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const target = {
    group: 'metal3.io',
    version: 'v1alpha1',
    plural: 'baremetalhosts',
    namespace: options.namespace,
  };
  const created = (await api.createNamespacedCustomObject({
    ...target,
    body: {
      apiVersion: 'metal3.io/v1alpha1',
      kind: 'BareMetalHost',
      metadata: {
        name: options.name,
        namespace: options.namespace,
        ...(options.annotations ? { annotations: options.annotations } : {}),
      },
      spec: {
        online: true,
        bootMACAddress: options.bootMac,
        ...(options.image ? { image: options.image } : {}),
      },
    },
  })) as Record<string, unknown>;
  await api.replaceNamespacedCustomObjectStatus({
    ...target,
    name: options.name,
    body: {
      ...created,
      status: {
        errorCount: options.error ? 1 : 0,
        errorMessage: options.error?.message ?? '',
        ...(options.error ? { errorType: options.error.type } : {}),
        operationalStatus: options.error ? 'error' : 'OK',
        poweredOn: true,
        provisioning: { ID: `id-${options.name}`, state: options.state ?? 'provisioned' },
        provisioningFailCount: 0,
        hardware: {
          nics: options.nics ?? [],
          ...(options.hardware?.cpus === undefined
            ? {}
            : { cpu: { arch: 'x86_64', count: options.hardware.cpus } }),
          ...(options.hardware?.ramMebibytes === undefined
            ? {}
            : { ramMebibytes: options.hardware.ramMebibytes }),
        },
      },
    },
  });
}

/**
 * Writes a Provisioning's status as the earlier steps would have (through the status
 * subresource), e.g. HostsResolved True with `status.nodes`, so one step can be driven alone.
 */
export async function writeProvisioningStatus(
  kubeConfig: KubeConfig,
  namespace: string,
  name: string,
  status: {
    conditions?: { type: string; status: string; reason: string; message: string }[];
    [field: string]: unknown;
  },
) {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const live = await readProvisioning(kubeConfig, namespace, name);
  const conditions = (status.conditions ?? []).map((c) => ({
    ...c,
    lastTransitionTime: '2026-01-01T00:00:00Z',
    observedGeneration: live.metadata.generation,
  }));
  return (await api.replaceNamespacedCustomObjectStatus({
    ...bpaGroup,
    plural: 'provisionings',
    namespace,
    name,
    body: { ...live, status: { ...live.status, ...status, conditions } },
  })) as StoredProvisioning;
}

/** Metadata that makes an object one the functions created for this Provisioning. */
export const managedFor = (owner: { metadata: { name: string; uid: string } }, cluster: string) => ({
  labels: { cluster, 'app.kubernetes.io/managed-by': 'bpa-functions' },
  ownerReferences: [
    {
      apiVersion: 'bpa.akraino.org/v1alpha1',
      kind: 'Provisioning',
      name: owner.metadata.name,
      uid: owner.metadata.uid,
      controller: true,
      blockOwnerDeletion: true,
    },
  ],
});

/**
 * A Provisioning of `cluster` that is Ready for its current generation, as kud-job-launch leaves
 * it: what software-install waits for (contract section 11) before it installs anything. For
 * tests that write the cluster's node ConfigMap themselves.
 */
export async function createReadyProvisioning(kubeConfig: KubeConfig, namespace: string, cluster: string) {
  await createProvisioning(
    kubeConfig,
    provisioningObject({
      name: cluster,
      namespace,
      cluster,
      masters: [{ label: 'ready-master', mac: 'aa:bb:cc:dd:ee:01' }],
    }),
  );
  return writeProvisioningStatus(kubeConfig, namespace, cluster, {
    conditions: [
      { type: 'Ready', status: 'True', reason: 'ClusterReady', message: `Cluster ${cluster} is ready` },
    ],
  });
}

/**
 * An Image with the status image-verify writes (`{phase: 'Ready', sha256, url}` once verified,
 * `{phase: 'Uploaded'}` before), through the status subresource; image-verify itself is exercised
 * in test/integration/images/.
 */
export async function createImage(
  kubeConfig: KubeConfig,
  options: { name: string; namespace: string; clusterName: string; status: Record<string, unknown> },
) {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const { name, namespace } = options;
  const created = (await api.createNamespacedCustomObject({
    ...bpaGroup,
    plural: 'images',
    namespace,
    body: {
      apiVersion: 'bpa.akraino.org/v1alpha1',
      kind: 'Image',
      metadata: { name, namespace },
      spec: {
        type: 'os',
        owner: namespace,
        clusterName: options.clusterName,
        imageName: name,
        length: 4096,
        format: 'raw',
      },
    },
  })) as Record<string, unknown>;
  await api.replaceNamespacedCustomObjectStatus({
    ...bpaGroup,
    plural: 'images',
    namespace,
    name,
    body: { ...created, status: options.status },
  });
}

/** A merge patch of a BareMetalHost's status, as Metal3 writes it (null removes a field). */
export async function patchBareMetalHostStatus(
  kubeConfig: KubeConfig,
  namespace: string,
  name: string,
  status: Record<string, unknown>,
) {
  await kubeConfig.makeApiClient(CustomObjectsApi).patchNamespacedCustomObjectStatus(
    {
      group: 'metal3.io',
      version: 'v1alpha1',
      plural: 'baremetalhosts',
      namespace,
      name,
      body: { status },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}
