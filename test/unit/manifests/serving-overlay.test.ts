import type { KubernetesObject } from '@kubernetes/client-node';
import { servingOverlay } from '../../../local/knative/serving-overlay.js';
import { BpaError } from '../../../shared/errors.js';
import { kustomize, kustomizeWithComponents, manifestsDir, parseObjects, type KubeObject } from './kustomize.js';

// The local Serving overlay (docs/knative.md) on the real render of manifests/ (kubectl
// kustomize): every ksvc becomes a Deployment and a Service that run the same containers, and
// every reference to a ksvc names them instead.

type Json = Record<string, unknown>;
type Container = Json & { name: string; env?: Json[]; ports?: { containerPort: number }[] };
type PodSpec = Json & { containers: Container[] };
type Ksvc = KubeObject & {
  spec: { template: { metadata: { labels?: Json; annotations?: Record<string, string> }; spec: PodSpec } };
};
type Deployment = KubeObject & {
  spec: {
    replicas: number;
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string>; annotations?: Json }; spec: PodSpec };
  };
};
type Service = KubeObject & { spec: { type: string; selector: Json; ports: Json[] } };

const renders: [string, string][] = [
  ['manifests/', kustomize(manifestsDir)],
  ['manifests/ with components/image-service', kustomizeWithComponents(['image-service'])],
];
const injected = ['PORT', 'K_REVISION', 'K_CONFIGURATION', 'K_SERVICE'];
const servingOnly = ['containerConcurrency', 'timeoutSeconds', 'responseStartTimeoutSeconds', 'idleTimeoutSeconds'];
const isKsvc = (o: KubeObject) => o.kind === 'Service' && o.apiVersion.startsWith('serving.knative.dev/');
const find = <T>(objects: KubeObject[], apiVersion: string, kind: string, name: string) =>
  objects.find((o) => o.apiVersion === apiVersion && o.kind === kind && o.metadata.name === name) as T | undefined;

/** Every `apiVersion` string anywhere in a value (object references included). */
function apiVersionsIn(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(apiVersionsIn);
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([field, inner]) =>
    field === 'apiVersion' && typeof inner === 'string' ? [inner] : apiVersionsIn(inner),
  );
}

/** A probe as written in the ksvc: the port the overlay fills in taken out again. */
function withoutFilledPort(probe: Json | undefined, written: Json | undefined, port: number): Json | undefined {
  if (!probe) return probe;
  const copy = structuredClone(probe) as { httpGet?: Json; tcpSocket?: Json };
  for (const handler of ['httpGet', 'tcpSocket'] as const) {
    const writtenHandler = (written as { [k: string]: Json | undefined } | undefined)?.[handler];
    if (copy[handler] && writtenHandler?.port === undefined) {
      expect(copy[handler].port).toBe(port);
      delete copy[handler].port;
    }
  }
  return copy;
}

describe.each(renders)('the local Serving overlay of %s', (_, text) => {
  const input = parseObjects(text);
  const ksvcs = input.filter(isKsvc) as Ksvc[];
  const { objects: output, notes } = servingOverlay(input as KubernetesObject[]);
  const objects = output as KubeObject[];

  it('holds Knative Services to convert', () => {
    expect(ksvcs.length).toBeGreaterThanOrEqual(5);
  });

  it.each(ksvcs.map((k) => [k.metadata.name, k] as const))(
    '%s: a Deployment that runs the same containers, pod spec and volumes',
    (name, ksvc) => {
      const deployment = find<Deployment>(objects, 'apps/v1', 'Deployment', name);
      expect(deployment?.metadata.namespace).toBe(ksvc.metadata.namespace);
      expect(deployment?.spec.replicas).toBe(1);
      expect(deployment?.spec.selector.matchLabels).toEqual({ 'serving.knative.dev/service': name });
      const template = ksvc.spec.template;
      expect(deployment?.spec.template.metadata.labels).toEqual({
        ...template.metadata.labels,
        'serving.knative.dev/service': name,
        'serving.knative.dev/configuration': name,
        'serving.knative.dev/revision': `${name}-00001`,
      });
      expect(deployment?.spec.template.metadata.annotations).toEqual(template.metadata.annotations);

      const pod = deployment!.spec.template.spec;
      const { containers: written, ...writtenPod } = template.spec;
      const { containers, terminationGracePeriodSeconds, ...podRest } = pod;
      // The pod spec minus the Serving-only fields; Knative sets the grace period to the timeout.
      expect(podRest).toEqual(Object.fromEntries(Object.entries(writtenPod).filter(([f]) => !servingOnly.includes(f))));
      expect(terminationGracePeriodSeconds).toBe(template.spec.timeoutSeconds ?? 300);
      expect(pod.serviceAccountName).toBe(template.spec.serviceAccountName);
      expect(pod.volumes).toEqual(template.spec.volumes);

      expect(containers).toHaveLength(written.length);
      const [container, writtenContainer] = [containers[0]!, written[0]!];
      const port = writtenContainer.ports?.[0]?.containerPort ?? 8080;
      for (const field of ['name', 'image', 'resources', 'ports', 'securityContext', 'volumeMounts']) {
        expect(container[field]).toEqual(writtenContainer[field]);
      }
      // The ksvc's env (configMapKeyRef entries included) first, then what Knative injects.
      expect(container.env?.slice(0, writtenContainer.env?.length ?? 0)).toEqual(writtenContainer.env ?? []);
      expect(container.env?.slice(writtenContainer.env?.length ?? 0)).toEqual([
        { name: 'PORT', value: String(port) },
        { name: 'K_REVISION', value: `${name}-00001` },
        { name: 'K_CONFIGURATION', value: name },
        { name: 'K_SERVICE', value: name },
      ]);
      expect(writtenContainer.env?.some((v) => injected.includes(v.name as string))).not.toBe(true);
      for (const probe of ['livenessProbe', 'startupProbe'] as const) {
        expect(withoutFilledPort(container[probe] as Json, writtenContainer[probe] as Json, port)).toEqual(
          writtenContainer[probe],
        );
      }
      // Without a readiness probe of its own the serving container gets Knative's default: TCP on
      // its port. Without a period (as every ksvc of manifests/ writes it), Serving probes it
      // aggressively at start: the kubelet's closest is every second.
      const writtenProbe = (writtenContainer.readinessProbe as Json | undefined) ?? { tcpSocket: {} };
      expect(writtenProbe["periodSeconds"]).toBeUndefined();
      expect(withoutFilledPort(container.readinessProbe as Json, writtenProbe, port)).toEqual({
        ...writtenProbe,
        periodSeconds: 1,
      });
    },
  );

  it.each(ksvcs.map((k) => [k.metadata.name, k] as const))(
    '%s: a ClusterIP Service on port 80 at the ksvc address, selecting the pods',
    (name, ksvc) => {
      const service = find<Service>(objects, 'v1', 'Service', name);
      const deployment = find<Deployment>(objects, 'apps/v1', 'Deployment', name);
      expect(service?.metadata.namespace).toBe(ksvc.metadata.namespace);
      expect(service?.spec.type).toBe('ClusterIP');
      const port = ksvc.spec.template.spec.containers[0]?.ports?.[0]?.containerPort ?? 8080;
      expect(service?.spec.ports).toEqual([{ name: 'http', port: 80, targetPort: port }]);
      expect(service?.spec.selector).toEqual({ 'serving.knative.dev/service': name });
      for (const [label, value] of Object.entries(service!.spec.selector)) {
        expect(deployment?.spec.template.metadata.labels[label]).toBe(value);
      }
    },
  );

  it('leaves no object of Knative Serving and no reference to one', () => {
    const left = objects.flatMap((o) =>
      apiVersionsIn(o).some((v) => v.startsWith('serving.knative.dev/')) ? [`${o.kind}/${o.metadata.name}`] : [],
    );
    expect(left).toEqual([]);
    expect(objects).toHaveLength(input.length + ksvcs.length);
  });

  it('points every Trigger, Broker and SinkBinding at the same functions, other fields unchanged', () => {
    const byKey = (o: KubeObject) => `${o.apiVersion} ${o.kind} ${o.metadata.namespace}/${o.metadata.name}`;
    const outputByKey = new Map(objects.map((o) => [byKey(o), o]));
    let rewritten = 0;
    for (const before of input.filter((o) => !isKsvc(o))) {
      const after = outputByKey.get(byKey(before)) as Json | undefined;
      expect(after).toBeDefined();
      // Expected: the same object with each ksvc ref renamed to the Service (or the Deployment for
      // a SinkBinding's subject), name and namespace kept.
      const expected = JSON.parse(JSON.stringify(before), function (this: unknown, field, value: unknown) {
        const ref = value as { apiVersion?: string; kind?: string } | null;
        if (ref && typeof ref === 'object' && ref.kind === 'Service' && ref.apiVersion?.startsWith('serving.knative.dev/')) {
          rewritten += 1;
          return field === 'subject' && before.kind === 'SinkBinding'
            ? { ...ref, apiVersion: 'apps/v1', kind: 'Deployment' }
            : { ...ref, apiVersion: 'v1', kind: 'Service' };
        }
        return value;
      }) as unknown;
      expect(after).toEqual(expected);
    }
    const triggers = input.filter((o) => o.kind === 'Trigger');
    const sinkBindings = input.filter((o) => o.kind === 'SinkBinding');
    // Each Trigger has a subscriber and a dead-letter sink; the Broker one dead-letter sink; each SinkBinding a subject.
    expect(rewritten).toBe(2 * triggers.length + 1 + sinkBindings.length);
    expect(triggers.length).toBeGreaterThan(0);
    expect(sinkBindings.length).toBeGreaterThan(0);
    for (const trigger of objects.filter((o) => o.kind === 'Trigger') as (KubeObject & { spec: { subscriber: { ref: Json } } })[]) {
      expect(trigger.spec.subscriber.ref).toEqual({ apiVersion: 'v1', kind: 'Service', name: trigger.metadata.labels?.['app.kubernetes.io/name'] });
    }
    for (const binding of objects.filter((o) => o.kind === 'SinkBinding') as (KubeObject & { spec: { subject: Json } })[]) {
      expect(binding.spec.subject).toEqual({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        name: binding.metadata.labels?.['app.kubernetes.io/name'],
      });
    }
  });

  it('names each dropped Serving-only setting in the notes, once', () => {
    const expected: string[] = [];
    for (const ksvc of ksvcs) {
      const name = ksvc.metadata.name;
      for (const field of servingOnly) {
        const value = ksvc.spec.template.spec[field];
        if (value !== undefined) expected.push(`${name}: ${field} ${String(value)} not enforced`);
      }
      for (const [annotation, value] of Object.entries(ksvc.spec.template.metadata.annotations ?? {})) {
        if (annotation.startsWith('autoscaling.knative.dev/')) expected.push(`${name}: ${annotation} ${value} not enforced`);
      }
    }
    expect(notes.map((n) => n.slice(0, n.indexOf(' not enforced') + ' not enforced'.length))).toEqual(expected);
    expect(notes).toContain(
      "host-lookup: timeoutSeconds 60 not enforced (no Knative Serving: requests are not cut off; the pod's terminationGracePeriodSeconds is 60, as on Knative)",
    );
  });
});

describe('the local Serving overlay refuses what it cannot convert', () => {
  const base = parseObjects(kustomize(manifestsDir)) as KubernetesObject[];
  const hostLookup = base.find((o) => o.kind === 'Service' && o.metadata?.name === 'host-lookup') as Ksvc &
    KubernetesObject;
  const others = base.filter((o) => o !== hostLookup);
  const withHostLookup = (change: (ksvc: Ksvc) => void) => {
    const copy = structuredClone(hostLookup);
    change(copy);
    return [...others, copy];
  };
  const reasonOf = (objects: KubernetesObject[]) => {
    try {
      servingOverlay(objects);
      return 'converted';
    } catch (error) {
      expect(error).toBeInstanceOf(BpaError);
      return `${(error as BpaError).reason}: ${(error as BpaError).message}`;
    }
  };

  it('a ksvc without containers, naming the field', () => {
    expect(reasonOf(withHostLookup((k) => (k.spec.template.spec.containers = [])))).toBe(
      'UnconvertibleKnativeService: Knative Service bpa-system/host-lookup: spec.template.spec.containers: a ksvc needs a container',
    );
  });

  it('a container that sets an env var Knative reserves', () => {
    expect(
      reasonOf(withHostLookup((k) => k.spec.template.spec.containers[0]!.env!.push({ name: 'PORT', value: '9090' }))),
    ).toMatch(/^UnconvertibleKnativeService: .*sets PORT, which Knative reserves/);
  });

  it('two containers with ports, or two ports', () => {
    expect(
      reasonOf(
        withHostLookup((k) => {
          const [first] = k.spec.template.spec.containers;
          k.spec.template.spec.containers.push({ ...first!, name: 'second' });
        }),
      ),
    ).toMatch(/exactly one must name a port \(found 2\)/);
    expect(
      reasonOf(withHostLookup((k) => k.spec.template.spec.containers[0]!.ports!.push({ containerPort: 9090 }))),
    ).toMatch(/ports: Knative allows at most one port per container/);
  });

  it('a traffic split', () => {
    expect(
      reasonOf(
        withHostLookup((k) => {
          (k.spec as Json).traffic = [
            { latestRevision: true, percent: 50 },
            { revisionName: 'host-lookup-00001', percent: 50 },
          ];
        }),
      ),
    ).toMatch(/spec.traffic splits or tags revisions/);
  });

  it('a reference to a ksvc the manifests do not hold', () => {
    const withoutDeadLetter = base.filter((o) => !(o.kind === 'Service' && o.metadata?.name === 'dead-letter'));
    expect(reasonOf(withoutDeadLetter)).toMatch(
      /^UnresolvableKnativeService: Broker bpa-system\/default spec.delivery.deadLetterSink.ref names Knative Service bpa-system\/dead-letter/,
    );
  });

  it('a Serving object other than a Service', () => {
    const route = { apiVersion: 'serving.knative.dev/v1', kind: 'Route', metadata: { name: 'r', namespace: 'bpa-system' } };
    expect(reasonOf([...base, route])).toMatch(/^UnsupportedServingObject: Route bpa-system\/r/);
  });

  it('converts the untouched render (the cases above fail for their change alone)', () => {
    expect(reasonOf(base)).toBe('converted');
  });
});

describe('the local Serving overlay follows Knative for what the manifests do not use', () => {
  const ksvc = (spec: Json, metadata: Json = {}) => ({
    apiVersion: 'serving.knative.dev/v1',
    kind: 'Service',
    metadata: { name: 'echo', namespace: 'ns', ...metadata },
    spec: { template: spec },
  });

  it('default port 8080, a named revision, h2c, probes with their own port kept, a public route noted', () => {
    const { objects, notes } = servingOverlay([
      ksvc({
        metadata: { name: 'echo-v2' },
        spec: {
          containers: [
            {
              image: 'echo',
              ports: [{ name: 'h2c', containerPort: 9000 }],
              livenessProbe: { httpGet: { path: '/live', port: 9001 } },
              readinessProbe: { tcpSocket: {} },
            },
          ],
        },
      }) as KubernetesObject,
      ksvc({ spec: { containers: [{ image: 'plain' }] } }, { name: 'plain', labels: { 'networking.knative.dev/visibility': 'cluster-local' } }) as KubernetesObject,
    ]);
    const [echo, echoService, plain, plainService] = objects as (Deployment | Service)[];
    const echoContainer = (echo as Deployment).spec.template.spec.containers[0]!;
    expect(echoContainer.livenessProbe).toEqual({ httpGet: { path: '/live', port: 9001 } });
    expect(echoContainer.readinessProbe).toEqual({ tcpSocket: { port: 9000 }, periodSeconds: 1 });
    expect(echoContainer.env).toContainEqual({ name: 'K_REVISION', value: 'echo-v2' });
    expect((echoService as Service).spec.ports).toEqual([
      { name: 'http2', appProtocol: 'kubernetes.io/h2c', port: 80, targetPort: 9000 },
    ]);
    expect((plain as Deployment).spec.template.spec.containers[0]!.env).toContainEqual({ name: 'PORT', value: '8080' });
    expect((plainService as Service).spec.ports).toEqual([{ name: 'http', port: 80, targetPort: 8080 }]);
    expect(notes).toEqual(['echo: public route not made (no Knative ingress: reachable inside the cluster only)']);
  });

  it('a sidecar gets the K_ variables but not PORT, and keeps its probes', () => {
    const { objects } = servingOverlay([
      ksvc({
        spec: {
          containers: [
            { name: 'side', image: 'side', readinessProbe: { exec: { command: ['true'] } } },
            { name: 'main', image: 'main', ports: [{ containerPort: 8081 }] },
          ],
        },
      }) as KubernetesObject,
    ]);
    const [side, main] = (objects[0] as Deployment).spec.template.spec.containers;
    expect(side?.env?.map((v) => v.name)).toEqual(['K_REVISION', 'K_CONFIGURATION', 'K_SERVICE']);
    expect(side?.readinessProbe).toEqual({ exec: { command: ['true'] } });
    expect(main?.env?.map((v) => v.name)).toEqual(injected);
    expect(main?.readinessProbe).toEqual({ tcpSocket: { port: 8081 }, periodSeconds: 1 });
  });

  it('keeps a readiness period the ksvc sets (Serving leaves it to the kubelet, no fast probing)', () => {
    const { objects } = servingOverlay([
      ksvc({
        spec: { containers: [{ image: 'slow', readinessProbe: { httpGet: { path: '/ready' }, periodSeconds: 5 } }] },
      }) as KubernetesObject,
    ]);
    expect((objects[0] as Deployment).spec.template.spec.containers[0]!.readinessProbe).toEqual({
      httpGet: { path: '/ready', port: 8080 },
      periodSeconds: 5,
    });
  });
});
