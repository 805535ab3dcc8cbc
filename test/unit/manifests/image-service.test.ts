import { parseAllDocuments } from 'yaml';
import { kustomizeWithComponents } from './kustomize.js';

type Rendered = {
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
  subjects?: { namespace?: string }[];
};

const rendered = parseAllDocuments(kustomizeWithComponents(['image-service'])).map((d) => d.toJS() as Rendered);
const named = (kind: string, name: string) => {
  const found = rendered.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in the render`);
  return found;
};
type Container = { image: string; env: { name: string; value?: string }[] };
const containerOf = (object: Rendered) =>
  ((object.spec as { template: { spec: { containers: Container[] } } }).template.spec.containers[0]!);

describe('components/image-service', () => {
  it('adds the image service to bpa-system with the base label', () => {
    const added = rendered.filter((o) => /image/.test(o.metadata.name) && o.kind !== 'CustomResourceDefinition');
    expect(added.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual(
      [
        'ClusterRole/bpa-functions:image-upload',
        'ClusterRole/bpa-functions:image-verify',
        'ClusterRole/bpa-functions:images-edit',
        'ClusterRole/bpa-functions:images-view',
        'ClusterRoleBinding/bpa-functions:image-upload',
        'ClusterRoleBinding/bpa-functions:image-upload-auth-delegator',
        'ClusterRoleBinding/bpa-functions:image-verify',
        'ConfigMap/bpa-image-store',
        'Deployment/image-download',
        'Service/image-download',
        'Service/image-upload',
        'Service/image-verify',
        'ServiceAccount/image-upload',
        'ServiceAccount/image-verify',
        'SinkBinding/image-upload-sink',
        'Trigger/image-verify-image-uploaded',
      ].sort(),
    );
    for (const object of added) {
      expect(object.metadata.labels?.['app.kubernetes.io/part-of']).toBe('bpa-functions');
      if (!object.kind.startsWith('Cluster')) expect(object.metadata.namespace).toBe('bpa-system');
      for (const subject of object.subjects ?? []) expect(subject.namespace).toBe('bpa-system');
    }
  });

  it('serves uploads from one Knative replica and downloads from a plain Deployment', () => {
    const upload = named('Service', 'image-upload');
    expect((upload.spec as { template: { metadata: { annotations: Record<string, string> } } }).template.metadata.annotations['autoscaling.knative.dev/max-scale']).toBe('1');
    expect(containerOf(upload).env).toContainEqual({ name: 'IMAGE_SERVICE_ROLES', value: 'upload' });
    const download = named('Deployment', 'image-download');
    expect(containerOf(download).env).toContainEqual({ name: 'IMAGE_SERVICE_ROLES', value: 'download' });
    expect(containerOf(download).image).toBe('ghcr.io/bpa-functions/image-upload:0.1.0');
    expect(containerOf(named('Service', 'image-verify')).image).toBe('ghcr.io/bpa-functions/image-verify:0.1.0');
  });

  it('triggers image-verify on image.uploaded', () => {
    const trigger = named('Trigger', 'image-verify-image-uploaded');
    expect(trigger.spec).toMatchObject({
      broker: 'default',
      filter: { attributes: { type: 'org.akraino.icn.bpa.image.uploaded' } },
      subscriber: { ref: { kind: 'Service', name: 'image-verify' } },
    });
    expect(trigger.spec).not.toHaveProperty('filters');
  });
});
