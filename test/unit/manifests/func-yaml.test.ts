import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { functionNames, repoRoot } from './kustomize.js';
import { renderedManifests } from './manifest-set.js';
import { funcYamlSchema } from './schemas.js';

const manifests = renderedManifests();
const readFuncYaml = (name: string) =>
  funcYamlSchema.parse(parse(readFileSync(join(repoRoot, 'functions', name, 'func.yaml'), 'utf8')));
const sortedFilters = (filters: Record<string, string>) => JSON.stringify(Object.entries(filters).sort());

describe.each(functionNames)('functions/%s/func.yaml', (name) => {
  const func = readFuncYaml(name);
  const service = manifests.serviceNamed(name);
  const template = service.spec.template;
  const [container] = template.spec.containers;

  it('names the function, its image, namespace and ServiceAccount as the manifests do', () => {
    expect(func.name).toBe(name);
    expect(func.image).toBe(container?.image);
    expect(func.image.startsWith(`${func.registry}/`)).toBe(true);
    expect(func.deploy.namespace).toBe(service.metadata.namespace);
    expect(func.deploy.serviceAccountName).toBe(template.spec.serviceAccountName);
    expect(func.deploy.labels).toContainEqual({ key: 'networking.knative.dev/visibility', value: 'cluster-local' });
  });

  it('has the Service’s scale, resources, concurrency and health endpoints', () => {
    expect(func.deploy.options.scale).toEqual({
      min: Number(template.metadata.annotations['autoscaling.knative.dev/min-scale']),
      max: Number(template.metadata.annotations['autoscaling.knative.dev/max-scale']),
    });
    expect(func.deploy.options.resources).toEqual({
      requests: container?.resources.requests,
      limits: { ...container?.resources.limits, concurrency: template.spec.containerConcurrency },
    });
    expect(func.deploy.healthEndpoints).toEqual({
      liveness: container?.livenessProbe?.httpGet.path,
      readiness: container?.readinessProbe?.httpGet.path,
    });
  });

  it('takes the same variables from bpa-config and mounts the same Secrets', () => {
    expect(func.run.envs).toEqual(
      (container?.env ?? []).map((v) => ({
        name: v.name,
        value: `{{ configMap:${v.valueFrom?.configMapKeyRef.name}:${v.valueFrom?.configMapKeyRef.key} }}`,
      })),
    );
    const volumes = new Map((template.spec.volumes ?? []).map((v) => [v.name, v.secret.secretName]));
    expect(func.run.volumes ?? []).toEqual(
      (container?.volumeMounts ?? []).map((m) => ({ secret: volumes.get(m.name), path: m.mountPath })),
    );
  });

  it('subscribes to exactly what the Triggers deliver to it', () => {
    const fromTriggers = manifests.triggers
      .filter((t) => t.spec.subscriber.ref?.name === name)
      // func subscriptions say "attribute equals value", as the Triggers' `filter.attributes` do.
      .map((t) => `${t.spec.broker} ${sortedFilters(t.spec.filter.attributes)}`)
      .sort();
    const fromFunc = func.deploy.subscriptions.map((s) => `${s.source} ${sortedFilters(s.filters)}`).sort();
    expect(fromFunc).toEqual(fromTriggers);
    expect(fromFunc.length).toBeGreaterThan(0);
  });
});
