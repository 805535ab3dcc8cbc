import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { createNamespace } from '../../local/control-plane/namespaces.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { bareMetalHostsResource, provisioningsResource } from '../../shared/k8s/resources.js';
import { hostName, inParallel } from './hosts.js';

/**
 * The floor of issue 26 item 4: what the chain writes for one Provisioning, written by one plain
 * client as fast as the API server takes them, no function, broker or event source in between.
 * The recipe is the chain's own, measured by the API server in the same run (writes per
 * Provisioning, by resource), so the floor writes what the chain wrote: the Provisioning, the
 * host claims, the inventory ConfigMaps, the Job, the status writes and the Events. Reads are
 * not in the floor: a plain client that knows what to write needs none.
 */
export interface FloorRecipe {
  hostPatches: number;
  configMaps: number;
  jobs: number;
  statusWrites: number;
  events: number;
}

export interface FloorOptions {
  clients: KubeClients;
  namespace: string;
  /** Where the Job and its inventory go (the functions' namespace in the chain). */
  systemNamespace: string;
  count: number;
  /** The BareMetalHosts to patch live in this namespace, named as the fleet names them. */
  hostsNamespace: string;
  hosts: number;
  provisioning: (index: number) => { metadata: { name: string } } & Record<string, unknown>;
  recipe: FloorRecipe;
}

const concurrency = 24;
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** Seconds from the first write to the last. */
export async function writeFloor(options: FloorOptions): Promise<number> {
  const { clients, namespace, systemNamespace, recipe } = options;
  await createNamespace(clients.kubeConfig, namespace);
  await createNamespace(clients.kubeConfig, systemNamespace);
  const provisionings = { ...provisioningsResource, namespace };
  const started = performance.now();
  await inParallel(
    options.count,
    async (i) => {
      const body = options.provisioning(i);
      const name = `floor-${body.metadata.name}`;
      await clients.custom.createNamespacedCustomObject({
        ...provisionings,
        body: { ...body, metadata: { ...body.metadata, name, namespace } },
      });
      for (let n = 0; n < recipe.hostPatches; n++)
        await clients.custom.patchNamespacedCustomObject(
          {
            ...bareMetalHostsResource,
            namespace: options.hostsNamespace,
            name: hostName((i * recipe.hostPatches + n) % options.hosts),
            body: { metadata: { annotations: { 'bench.bpa.akraino.org/floor': name } } },
          },
          mergePatch,
        );
      const inventory = `[all]\n${Array.from({ length: recipe.hostPatches }, (_, n) => `node-${n} ansible_ssh_host=10.0.${i % 250}.${n}`).join('\n')}\n`;
      for (let c = 0; c < recipe.configMaps; c++)
        await clients.core.createNamespacedConfigMap({
          namespace: c === 0 ? namespace : systemNamespace,
          body: { metadata: { name: `${name}-${c}` }, data: { 'hosts.ini': inventory } },
        });
      for (let j = 0; j < recipe.jobs; j++)
        await clients.batch.createNamespacedJob({
          namespace: systemNamespace,
          body: {
            metadata: { name: `${name}-${j}` },
            spec: {
              backoffLimit: 0,
              template: {
                spec: {
                  restartPolicy: 'Never',
                  containers: [{ name: 'kud', image: 'localhost/kud-installer', args: ['--cluster', name] }],
                },
              },
            },
          },
        });
      for (let s = 0; s < recipe.statusWrites; s++)
        await clients.custom.patchNamespacedCustomObjectStatus(
          {
            ...provisionings,
            name,
            body: {
              status: {
                conditions: [
                  {
                    type: `Step${s}`,
                    status: 'True',
                    reason: 'Done',
                    message: 'written by the floor',
                    lastTransitionTime: new Date().toISOString(),
                  },
                ],
              },
            },
          },
          mergePatch,
        );
      for (let e = 0; e < recipe.events; e++)
        await clients.core.createNamespacedEvent({
          namespace,
          body: {
            metadata: { generateName: `${name}.` },
            involvedObject: {
              apiVersion: 'bpa.akraino.org/v1alpha1',
              kind: 'Provisioning',
              namespace,
              name,
            },
            reason: 'Floor',
            message: 'written by the floor',
            type: 'Normal',
            source: { component: 'bench-floor' },
          },
        });
    },
    { done: 0 },
    concurrency,
  );
  return (performance.now() - started) / 1000;
}
