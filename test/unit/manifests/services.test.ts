import { softwareInstallConfigSchema } from '../../../functions/software-install/config.js';
import {
  functionNames,
  kustomize,
  kustomizeWithImage,
  manifestsDir,
  ofKind,
  parseObjects,
} from './kustomize.js';
import { renderedManifests } from './manifest-set.js';
import { rbacTable } from './rbac-table.js';

const manifests = renderedManifests();
/** Functions that run the sweep and so post events to the broker themselves. */
const sweepers = ['host-lookup', 'kud-job-launch', 'software-install'];

describe('Knative Services', () => {
  it('are the four functions and the dead-letter sink', () => {
    expect(manifests.knativeServices.map((s) => s.metadata.name).sort()).toEqual(
      [...functionNames, 'dead-letter'].sort(),
    );
  });

  it.each(manifests.knativeServices.map((s) => [s.metadata.name, s] as const))(
    '%s: cluster-local, restricted security context, bounded resources and scale',
    (_, service) => {
      expect(service.metadata.labels?.['networking.knative.dev/visibility']).toBe('cluster-local');
      const template = service.spec.template;
      const [container] = template.spec.containers;
      expect(container?.securityContext).toEqual({
        runAsNonRoot: true,
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ['ALL'] },
        seccompProfile: { type: 'RuntimeDefault' },
      });
      const min = Number(template.metadata.annotations['autoscaling.knative.dev/min-scale']);
      const max = Number(template.metadata.annotations['autoscaling.knative.dev/max-scale']);
      expect(Number.isInteger(min) && Number.isInteger(max) && min >= 0 && max >= Math.max(min, 1)).toBe(true);
      // Knative's maximum request timeout: no long work inside a request beyond it.
      expect(template.spec.timeoutSeconds).toBeLessThanOrEqual(600);
      // Every secret volume is mounted read-only (Knative rejects anything else).
      for (const mount of container?.volumeMounts ?? []) expect(mount.readOnly).toBe(true);
    },
  );

  it.each(functionNames)('%s: probes, image, ServiceAccount and config', (name) => {
    const service = manifests.serviceNamed(name);
    const spec = service.spec.template.spec;
    const [container] = spec.containers;
    expect(container?.readinessProbe?.httpGet.path).toBe('/health/readiness');
    expect(container?.livenessProbe?.httpGet.path).toBe('/health/liveness');
    expect(container?.image).toBe(`ghcr.io/bpa-functions/${name}:0.1.0`);
    expect(spec.serviceAccountName).toBe(rbacTable[name]?.serviceAccount);
    expect(spec.containerConcurrency).toBeGreaterThan(0);
    expect(service.spec.template.metadata.labels['app.kubernetes.io/name']).toBe(name);
    // Every variable comes from a key that bpa-config really has.
    for (const variable of container?.env ?? []) {
      const ref = variable.valueFrom?.configMapKeyRef;
      expect({ variable: variable.name, configMap: ref?.name, known: ref ? ref.key in manifests.bpaConfig : false }).toEqual(
        { variable: variable.name, configMap: 'bpa-config', known: true },
      );
    }
    const names = (container?.env ?? []).map((v) => v.name);
    expect(names.includes('BROKER_URL')).toBe(sweepers.includes(name));
  });

  it('gives every function that sends events its sink from the Broker itself (SinkBinding -> K_SINK)', () => {
    // A fixed BROKER_URL names the MT broker's ingress; Kafka and RabbitMQ brokers have their own,
    // so the sweep would post nowhere there. Knative resolves the Broker ref for each class.
    const bindings = ofKind(parseObjects(kustomize(manifestsDir)), 'SinkBinding');
    const bound = bindings.map((b) => {
      const spec = (b as unknown as { spec: { subject: unknown; sink: unknown } }).spec;
      expect(spec.sink).toEqual({ ref: { apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', name: 'default' } });
      return spec.subject;
    });
    expect(bound).toEqual(
      sweepers.map((name) => ({ apiVersion: 'serving.knative.dev/v1', kind: 'Service', name })),
    );
    // BROKER_URL stays an explicit override only.
    expect(manifests.bpaConfig.BROKER_URL).toBe('');
  });

  it('holds no software-install request open for an install: a short timeout, as kud-job-launch’s', () => {
    const spec = manifests.serviceNamed('software-install').spec.template.spec;
    // The SSH work runs in the install Job (contract section 11), never in the request.
    expect(spec.timeoutSeconds).toBe(60);
    expect(spec.responseStartTimeoutSeconds).toBeUndefined();
  });

  it('runs the install Jobs in software-install’s own image, as its config defaults to', () => {
    const [container] = manifests.serviceNamed('software-install').spec.template.spec.containers;
    // An image field of `images:` (manifests/image-fields.yaml): one setting changes both.
    expect(manifests.bpaConfig.INSTALL_JOB_IMAGE).toBe(container?.image);
    const defaults = softwareInstallConfigSchema.parse({});
    expect(container?.image?.startsWith(`${defaults.INSTALL_JOB_IMAGE}:`)).toBe(true);
  });

  it('runs the kubeconfig publisher in kud-job-launch’s own image, whatever `images:` sets', () => {
    const [container] = manifests.serviceNamed('kud-job-launch').spec.template.spec.containers;
    expect(manifests.bpaConfig.KUBECONFIG_PUBLISHER_IMAGE).toBe(container?.image);
    // A changed image setting moves the publisher with it (an image field, not a kept-equal value).
    const moved = renderedManifests(
      kustomizeWithImage('ghcr.io/bpa-functions/kud-job-launch', 'registry.example/kjl:9.9'),
    );
    expect(moved.bpaConfig.KUBECONFIG_PUBLISHER_IMAGE).toBe('registry.example/kjl:9.9');
  });

  it.each([
    ['kud-job-launch', ['KUD_IMAGE', 'CLEANUP_IMAGE', 'KUBECONFIG_PUBLISHER_IMAGE']],
    ['software-install', ['INSTALL_JOB_IMAGE']],
  ])('gives %s each Job image the jobs policy admits, from bpa-config', (name, keys) => {
    // The policy (manifests/policies/jobs.yaml) compares a Job's images with bpa-config's values:
    // a function that takes its own default instead is refused as soon as an overlay moves them.
    const [container] = manifests.serviceNamed(name).spec.template.spec.containers;
    const fromConfig = (container?.env ?? [])
      .filter((v) => v.valueFrom?.configMapKeyRef.name === 'bpa-config')
      .map((v) => [v.name, v.valueFrom?.configMapKeyRef.key]);
    for (const key of keys) expect(fromConfig).toContainEqual([key, key]);
  });

  it('mounts the SSH key and known_hosts Secrets into software-install only', () => {
    const secretsOf = (name: string) =>
      (manifests.serviceNamed(name).spec.template.spec.volumes ?? []).map((v) => v.secret.secretName).sort();
    expect(secretsOf('software-install')).toEqual(['ssh-key-secret', 'ssh-known-hosts']);
    for (const name of ['host-lookup', 'inventory-render', 'kud-job-launch']) expect(secretsOf(name)).toEqual([]);
  });

  it('puts every namespaced object in bpa-system but the BareMetalHost Roles of host-lookup and kud-job-launch (BMH_NAMESPACE)', () => {
    const clusterScoped = ['Namespace', 'CustomResourceDefinition', 'ClusterRole', 'ClusterRoleBinding'];
    const misplaced = manifests.objects
      .filter((o) => !clusterScoped.includes(o.kind) && o.metadata.namespace !== 'bpa-system')
      .map((o) => `${o.metadata.namespace}/${o.kind}/${o.metadata.name}`);
    // test/unit/manifests/rbac.test.ts checks its rules and binding.
    expect(misplaced).toEqual([
      'metal3/Role/bpa-functions:host-lookup-hosts',
      'metal3/Role/bpa-functions:kud-job-launch-hosts',
      'metal3/RoleBinding/bpa-functions:host-lookup-hosts',
      'metal3/RoleBinding/bpa-functions:kud-job-launch-hosts',
    ]);
    expect(manifests.objects.filter((o) => o.kind === 'Namespace').map((o) => o.metadata.name)).toEqual([
      'bpa-system',
    ]);
  });
});
