import type { KubeClients } from './clients.js';
import type { CustomResource } from './resources.js';
import type { StoredObject } from './stored-object.js';
import { callApi, readOrUndefined } from './api-errors.js';

/** Reads of custom resources (Provisionings, Softwares, BareMetalHosts): one object, or lists. */

/** One custom object: what is read, and whose status is written (status-apply.ts). */
export interface StatusTarget {
  resource: CustomResource;
  namespace: string;
  name: string;
}

/** Reads one object; undefined when it does not exist. */
export async function getCustomObject(
  clients: KubeClients,
  target: StatusTarget,
): Promise<StoredObject | undefined> {
  const { group, version, plural } = target.resource;
  return readOrUndefined(
    `read ${plural} ${target.namespace}/${target.name}`,
    () =>
      clients.custom.getNamespacedCustomObject({
        group,
        version,
        plural,
        namespace: target.namespace,
        name: target.name,
      }) as Promise<StoredObject>,
  );
}

/** Lists a custom resource in one namespace or, without one, in all namespaces. */
export async function listCustomObjects(
  clients: KubeClients,
  resource: CustomResource,
  options: { namespace?: string; labelSelector?: string } = {},
): Promise<StoredObject[]> {
  const { group, version, plural } = resource;
  const where = options.namespace ? `namespace ${options.namespace}` : 'all namespaces';
  const list = (await callApi(`list ${plural} in ${where}`, () =>
    options.namespace
      ? clients.custom.listNamespacedCustomObject({
          group,
          version,
          plural,
          namespace: options.namespace,
          labelSelector: options.labelSelector,
        })
      : clients.custom.listClusterCustomObject({
          group,
          version,
          plural,
          labelSelector: options.labelSelector,
        }),
  )) as { items?: StoredObject[] };
  return list.items ?? [];
}

/** Lists in each of `namespaces`, or in all namespaces when the list is empty (the sweeps' scope). */
export async function listInNamespaces(
  clients: KubeClients,
  resource: CustomResource,
  namespaces: readonly string[],
): Promise<StoredObject[]> {
  if (namespaces.length === 0) return listCustomObjects(clients, resource);
  const lists = await Promise.all(
    namespaces.map((namespace) => listCustomObjects(clients, resource, { namespace })),
  );
  return lists.flat();
}
