import { kustomize, manifestsDir, ofKind, parseObjects, type KubeObject } from './kustomize.js';
import {
  apiServerSourceSchema,
  brokerSchema,
  clusterRoleBindingSchema,
  clusterRoleSchema,
  knativeServiceSchema,
  roleBindingSchema,
  roleSchema,
  pingSourceSchema,
  triggerSchema,
} from './schemas.js';
import { z } from 'zod';

const configMapSchema = z.looseObject({
  metadata: z.looseObject({ name: z.string() }),
  data: z.record(z.string(), z.string()),
});

/** The rendered default install, parsed and split by kind. Rendered once per test file. */
export function renderedManifests(text = kustomize(manifestsDir)) {
  const objects: KubeObject[] = parseObjects(text);
  const knativeServices = ofKind(objects, 'Service', 'serving.knative.dev').map((o) =>
    knativeServiceSchema.parse(o),
  );
  const bpaConfig = configMapSchema.parse(
    ofKind(objects, 'ConfigMap').find((o) => o.metadata.name === 'bpa-config'),
  );
  return {
    objects,
    knativeServices,
    serviceNamed: (name: string) => {
      const found = knativeServices.find((s) => s.metadata.name === name);
      if (!found) throw new Error(`no Knative Service ${name} in the render`);
      return found;
    },
    triggers: ofKind(objects, 'Trigger').map((o) => triggerSchema.parse(o)),
    brokers: ofKind(objects, 'Broker').map((o) => brokerSchema.parse(o)),
    apiServerSources: ofKind(objects, 'ApiServerSource').map((o) => apiServerSourceSchema.parse(o)),
    pingSources: ofKind(objects, 'PingSource').map((o) => pingSourceSchema.parse(o)),
    clusterRoles: ofKind(objects, 'ClusterRole').map((o) => clusterRoleSchema.parse(o)),
    clusterRoleBindings: ofKind(objects, 'ClusterRoleBinding').map((o) => clusterRoleBindingSchema.parse(o)),
    roles: ofKind(objects, 'Role').map((o) => roleSchema.parse(o)),
    roleBindings: ofKind(objects, 'RoleBinding').map((o) => roleBindingSchema.parse(o)),
    serviceAccounts: ofKind(objects, 'ServiceAccount'),
    bpaConfig: bpaConfig.data,
  };
}
export type RenderedManifests = ReturnType<typeof renderedManifests>;

/** ISO-8601 `PT<n>S` to seconds. */
export const isoSeconds = (duration: string) => Number(/^PT(\d+(?:\.\d+)?)S$/.exec(duration)?.[1] ?? NaN);
