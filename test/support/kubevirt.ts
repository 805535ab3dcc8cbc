/**
 * KubeVirt's VirtualMachineInstances for the kubevirt-vm tests: KubeVirt's REAL CRD of a pinned
 * release (test/fixtures/kubevirt, generated from kubevirt.io/kubevirt's own sources by
 * engines/kubevirt-crd), installed into the run's control plane like the other CRDs; other files
 * of the run may share it, so it is never removed.
 *
 * IMITATION: no virt-controller or virt-handler runs here. The test writes each VMI's status as
 * virt-handler would (phase, status.interfaces[]); KubeVirt's CRD has no status subresource, so
 * status is stored with the object, and the real schema validates all of it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { installCrds } from '../../local/control-plane/crds.js';
import { parseObjects } from '../../shared/core/documents.js';
import { virtualMachineInstancesResource } from '../../shared/k8s/resources.js';
import { fixturesRoot } from '../unit/core/golden.js';

export const kubevirtCrdFile = join(fixturesRoot, 'kubevirt', 'virtualmachineinstances.kubevirt.io.yaml');

/** Installs (or keeps) KubeVirt's VMI CRD and waits until it is served. */
export const installKubevirtCrd = (kubeConfig: KubeConfig) => installCrds(kubeConfig, [kubevirtCrdFile]);

export interface StoredVmi {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace: string;
    resourceVersion: string;
    annotations?: Record<string, string>;
  };
  spec: object;
  status?: { phase?: string; interfaces?: { name?: string; mac?: string; ipAddress?: string }[] };
}

/** The VMIs of test/fixtures/render/vmis/vmis.yaml (the render golden's), by name. */
export function fixtureVmis(): Map<string, StoredVmi> {
  const list = parseObjects(readFileSync(join(fixturesRoot, 'render', 'vmis', 'vmis.yaml'), 'utf8'));
  return new Map((list as StoredVmi[]).map((vmi) => [vmi.metadata.name, vmi]));
}

const api = (kubeConfig: KubeConfig) => kubeConfig.makeApiClient(CustomObjectsApi);

/** Creates a VMI in `namespace`, status included (as virt-handler would have written it). */
export async function createVmi(
  kubeConfig: KubeConfig,
  namespace: string,
  vmi: StoredVmi,
): Promise<StoredVmi> {
  return (await api(kubeConfig).createNamespacedCustomObject({
    ...virtualMachineInstancesResource,
    namespace,
    body: { ...vmi, metadata: { ...vmi.metadata, namespace } },
  })) as StoredVmi;
}

export async function readVmi(kubeConfig: KubeConfig, namespace: string, name: string): Promise<StoredVmi> {
  return (await api(kubeConfig).getNamespacedCustomObject({
    ...virtualMachineInstancesResource,
    namespace,
    name,
  })) as StoredVmi;
}

/** Replaces a VMI's status (the whole object: KubeVirt's CRD has no status subresource). */
export async function writeVmiStatus(
  kubeConfig: KubeConfig,
  namespace: string,
  name: string,
  status: StoredVmi['status'],
): Promise<StoredVmi> {
  const live = await readVmi(kubeConfig, namespace, name);
  return (await api(kubeConfig).replaceNamespacedCustomObject({
    ...virtualMachineInstancesResource,
    namespace,
    name,
    body: { ...live, status },
  })) as StoredVmi;
}
