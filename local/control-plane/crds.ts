import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { ApiextensionsV1Api, CustomObjectsApi, KubernetesObjectApi } from '@kubernetes/client-node';
import { z } from 'zod';
import { applyObject, readYamlObjects } from './apply.js';
import { waitFor } from './wait.js';

/** A CRD to install: a YAML file, a directory of YAML files, or an object. */
export type CrdInput = string | KubernetesObject;

/** One installed CRD, served and listed by discovery. */
export interface InstalledCrd {
  name: string;
  group: string;
  plural: string;
  kind: string;
  versions: string[];
}

/** The parts of a CRD (wire format) this module reads; everything else is passed on untouched. */
const crdDocumentSchema = z.looseObject({
  apiVersion: z.literal('apiextensions.k8s.io/v1'),
  kind: z.literal('CustomResourceDefinition'),
  metadata: z.looseObject({ name: z.string().min(1) }),
  spec: z.looseObject({
    group: z.string().min(1),
    names: z.looseObject({ plural: z.string().min(1), kind: z.string().min(1) }),
    versions: z.array(z.looseObject({ name: z.string().min(1), served: z.boolean() })).min(1),
  }),
});
export type CrdDocument = z.infer<typeof crdDocumentSchema>;

const isYamlFile = (name: string) => name.endsWith('.yaml') || name.endsWith('.yml');

/** Expands files and directories into CRD objects; anything that is not a v1 CRD is an error. */
export function loadCrds(inputs: CrdInput[]): CrdDocument[] {
  return inputs.flatMap((input) => {
    const objects = ((): { object: KubernetesObject; source: string }[] => {
      if (typeof input !== 'string') return [{ object: input, source: 'object' }];
      if (statSync(input).isDirectory()) {
        const files = readdirSync(input).filter(isYamlFile).sort();
        if (files.length === 0) throw new Error(`${input} holds no .yaml file`);
        return files.flatMap((file) =>
          readYamlObjects(join(input, file)).map((object) => ({ object, source: join(input, file) })),
        );
      }
      return readYamlObjects(input).map((object) => ({ object, source: input }));
    })();
    return objects.map(({ object, source }) => {
      const parsed = crdDocumentSchema.safeParse(object);
      if (!parsed.success) {
        throw new Error(
          `${source}: ${object.kind}/${object.metadata?.name} is not an apiextensions.k8s.io/v1 ` +
            `CustomResourceDefinition: ${z.prettifyError(parsed.error)}`,
        );
      }
      return parsed.data;
    });
  });
}

const describe = (crd: CrdDocument): InstalledCrd => ({
  name: crd.metadata.name,
  group: crd.spec.group,
  plural: crd.spec.names.plural,
  kind: crd.spec.names.kind,
  versions: crd.spec.versions.filter((v) => v.served).map((v) => v.name),
});

/**
 * Creates or replaces each CRD, then waits until the API server has accepted its names, marked it
 * Established, lists it in discovery and serves a list call for every served version: after
 * this a client (or KubernetesObjectApi's discovery) can use the new kinds at once.
 */
export async function installCrds(
  kubeConfig: KubeConfig,
  inputs: CrdInput[],
  options: { timeoutMs?: number } = {},
): Promise<InstalledCrd[]> {
  const crds = loadCrds(inputs);
  const objects = KubernetesObjectApi.makeApiClient(kubeConfig);
  const extensions = kubeConfig.makeApiClient(ApiextensionsV1Api);
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const timeoutMs = options.timeoutMs ?? 60_000;
  await Promise.all(crds.map((crd) => applyObject(objects, crd)));
  return Promise.all(
    crds.map(async (crd) => {
      const installed = describe(crd);
      await waitFor(
        async () => {
          const current = await extensions.readCustomResourceDefinition({ name: installed.name });
          const conditions = current.status?.conditions ?? [];
          const isTrue = (type: string) => conditions.some((c) => c.type === type && c.status === 'True');
          const refused = conditions.find((c) => c.type === 'NamesAccepted' && c.status === 'False');
          if (refused) throw new Error(`names not accepted: ${refused.message}`);
          return isTrue('Established') ? true : undefined;
        },
        { what: `CRD ${installed.name} to be Established`, timeoutMs, intervalMs: 200 },
      );
      for (const version of installed.versions) {
        await waitFor(
          async () => {
            const resources = await custom.getAPIResources({ group: installed.group, version });
            if (!resources.resources.some((r) => r.name === installed.plural)) return undefined;
            await custom.listClusterCustomObject({
              group: installed.group,
              version,
              plural: installed.plural,
              limit: 1,
            });
            return true;
          },
          {
            what: `${installed.plural}.${installed.group}/${version} to be served`,
            timeoutMs,
            intervalMs: 200,
          },
        );
      }
      return installed;
    }),
  );
}
