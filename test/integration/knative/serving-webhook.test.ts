/**
 * The Knative Services of manifests/ through Knative Serving's own admission webhook.
 *
 * Real: Serving's webhook (knative.dev/serving v0.50.0, built from its Go module by
 * engines/build.sh knative-serving, made into its image by local/images/knative.ts), installed
 * from the module's own config/ YAML (local/knative/serving-webhook.ts: CRDs, ConfigMaps, RBAC,
 * Deployment, Service, Secret and webhook configurations, unchanged but for the image resolved
 * to the one imported: installServingWebhookOnRealNode); Kubernetes' kube-apiserver, which calls
 * it for every ksvc (`kubectl apply --dry-run=server` runs the whole admission chain: Serving's
 * defaulting, the CRD schema, Serving's validation); kube-controller-manager, kube-scheduler and
 * the real node (local/kubelet-node: containerd, kubelet, kube-proxy), which runs the webhook's
 * pod from its image. Serving's controller, activator and autoscaler do not run (they need
 * Envoy: docs/knative.md), so nothing here turns a ksvc into pods.
 *
 * On a cluster of its own: Serving's webhook intercepts every ksvc, and the shared suites create
 * theirs without it. The SSH timeout below software-install's timeoutSeconds is checked on the
 * rendered manifests by test/unit/manifests/services.test.ts; here, that Knative itself admits
 * those limits and what it adds to them.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AppsV1Api } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { z } from 'zod';
import { waitFor } from '../../../local/control-plane/wait.js';
import { installServingWebhookOnRealNode } from '../../../local/knative/real-node.js';
import { servingNamespace, type ServingWebhookInstall } from '../../../local/knative/serving-webhook.js';
import { startStackCluster, type StackCluster } from '../../../local/stack/cluster.js';
import { describeOnKnative } from '../../support/knative.js';
import {
  kustomize,
  kustomizeWithComponents,
  manifestsDir,
  ofKind,
  parseObjects,
  type KubeObject,
} from '../../unit/manifests/kustomize.js';
import { kubectl } from '../manifests/kubectl.js';

/** Serving's defaults when config-defaults sets nothing (pkg/apis/config/defaults.go). */
const servingDefaults = {
  maxRevisionTimeoutSeconds: 600,
  responseStartTimeoutSeconds: 300,
  maxConcurrency: 1000,
};

const probeSchema = z.looseObject({
  tcpSocket: z.looseObject({}).optional(),
  httpGet: z.looseObject({}).optional(),
  periodSeconds: z.number().optional(),
  timeoutSeconds: z.number().optional(),
  failureThreshold: z.number().optional(),
  successThreshold: z.number().optional(),
});
const ksvcSchema = z.looseObject({
  metadata: z.looseObject({ name: z.string(), annotations: z.record(z.string(), z.string()).optional() }),
  spec: z.looseObject({
    template: z.looseObject({
      spec: z.looseObject({
        containerConcurrency: z.number().optional(),
        timeoutSeconds: z.number().optional(),
        responseStartTimeoutSeconds: z.number().optional(),
        enableServiceLinks: z.boolean().optional(),
        containers: z.array(z.looseObject({ name: z.string(), readinessProbe: probeSchema.optional() })),
      }),
    }),
    traffic: z.array(z.looseObject({})).optional(),
  }),
});
type Ksvc = z.infer<typeof ksvcSchema>;

let cluster: StackCluster;
let installed: ServingWebhookInstall;
/** Who the admin kubeconfig authenticates as: Serving records it as the ksvc's creator. */
let username: string;

const run = (args: string[], input?: string) => kubectl(cluster.kubeconfigPath, args, input);

/** `kubectl apply --dry-run=server -o json`: the objects as admitted (and defaulted), or the refusal. */
async function dryRun(objects: KubeObject[]) {
  const result = await run(
    ['apply', '--dry-run=server', '-o', 'json', '-f', '-'],
    objects.map((o) => stringify(o)).join('---\n'),
  );
  if (result.code !== 0) return { admitted: [] as Ksvc[], refusal: result.stderr.trim() };
  const output = JSON.parse(result.stdout) as { kind: string; items?: unknown[] };
  const items = output.kind === 'List' ? (output.items ?? []) : [output];
  return { admitted: items.map((item) => ksvcSchema.parse(item)), refusal: '' };
}

const ksvcsOf = (rendered: string) => ofKind(parseObjects(rendered), 'Service', 'serving.knative.dev');
const softwareInstall = () => {
  const ksvc = ksvcsOf(kustomize(manifestsDir)).find((o) => o.metadata.name === 'software-install');
  if (!ksvc) throw new Error('manifests/ has no software-install ksvc');
  return ksvc as KubeObject & Ksvc;
};
/** software-install's ksvc from manifests/ with its revision template's spec changed. */
const withTemplateSpec = (change: Record<string, unknown>): KubeObject => {
  const ksvc = structuredClone(softwareInstall());
  Object.assign(ksvc.spec.template.spec, change);
  return ksvc;
};
const denial = (webhook: string) => `admission webhook "${webhook}" denied the request`;

// Skips where the other Knative suites skip (no node, BPA_TEST_KNATIVE=0), saying why.
describeOnKnative("Knative Serving's admission webhook on a cluster of its own", () => {
  beforeAll(async () => {
    cluster = await startStackCluster({ fallBack: false });
    // Serving's binaries (built when missing), its webhook's image imported into the node.
    installed = await installServingWebhookOnRealNode({
      kubeConfig: cluster.kubeConfig,
      node: cluster.kubeletNode!,
      log: (line) => process.stderr.write(`[knative-serving] ${line}\n`),
    });
    const whoami = await run(['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}']);
    expect(whoami.code).toBe(0);
    username = whoami.stdout.trim();
    // Serving's validation dry-runs each ksvc's pod (pkg/webhook ValidateService), which needs
    // its ServiceAccount: create manifests/' Namespace and ServiceAccounts (the image service's too).
    const prerequisites = parseObjects(kustomizeWithComponents(['image-service'])).filter(
      (o) => o.kind === 'Namespace' || o.kind === 'ServiceAccount',
    );
    const created = await run(['create', '-f', '-'], prerequisites.map((o) => stringify(o)).join('---\n'));
    expect(created.stderr).toBe('');
  }, 600_000);

  afterAll(async () => {
    await cluster?.stop();
  }, 120_000);

  it('runs the webhook alone, from config/ and its image, and registers it with the API server', async () => {
    expect(installed.workloads).toEqual(['deployment/webhook']);
    const apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
    const deployments = await apps.listNamespacedDeployment({ namespace: servingNamespace });
    expect(deployments.items.map((d) => d.metadata?.name)).toEqual(['webhook']);
    // From its image as imported into the node, never pulled.
    const container = deployments.items[0]?.spec?.template.spec?.containers[0];
    expect(container?.image).toMatch(
      /^localhost\/bpa-functions\/knative-serving-webhook@sha256:[0-9a-f]{64}$/,
    );
    expect(container?.imagePullPolicy).toBe('Never');
    // config.webhook.serving.knative.dev ships without rules: the running webhook writes them.
    const config = await run([
      'get',
      'validatingwebhookconfiguration',
      'config.webhook.serving.knative.dev',
      '-o',
      'jsonpath={.webhooks[0].rules[0].resources}',
    ]);
    expect(JSON.parse(config.stdout)).toEqual(['configmaps/*']);
  });

  describe.each([
    ['manifests/', () => kustomize(manifestsDir)],
    ['manifests/ with components/image-service', () => kustomizeWithComponents(['image-service'])],
  ])('every ksvc of %s', (_, render) => {
    let input: (KubeObject & Ksvc)[];
    let admitted: Map<string, Ksvc>;

    beforeAll(async () => {
      input = ksvcsOf(render()).map((o) => ({ ...o, ...ksvcSchema.parse(o) }));
      const result = await dryRun(input);
      expect(result.refusal).toBe('');
      admitted = new Map(result.admitted.map((k) => [k.metadata.name, k]));
    }, 120_000);

    it('is admitted by Serving with its own limits kept', () => {
      expect([...admitted.keys()].sort()).toEqual(input.map((k) => k.metadata.name).sort());
      for (const ksvc of input) {
        const spec = admitted.get(ksvc.metadata.name)?.spec.template.spec;
        expect(spec?.timeoutSeconds).toBe(ksvc.spec.template.spec.timeoutSeconds);
        expect(spec?.containerConcurrency).toBe(ksvc.spec.template.spec.containerConcurrency);
      }
    });

    it("is defaulted by Serving's code: creator, traffic, service links, readiness probes", () => {
      for (const ksvc of input) {
        // None of it is in manifests/: what comes back is Serving's doing.
        expect(ksvc.metadata.annotations?.['serving.knative.dev/creator']).toBeUndefined();
        expect(ksvc.spec.traffic).toBeUndefined();
        expect(ksvc.spec.template.spec.enableServiceLinks).toBeUndefined();
        const out = admitted.get(ksvc.metadata.name);
        // Serving's SetUserInfo, from the admission request's user.
        expect(out?.metadata.annotations?.['serving.knative.dev/creator']).toBe(username);
        expect(out?.metadata.annotations?.['serving.knative.dev/lastModifier']).toBe(username);
        // RouteSpec.SetDefaults: all traffic to the latest revision.
        expect(out?.spec.traffic).toEqual([{ latestRevision: true, percent: 100 }]);
        // config-defaults' enable-service-links (false unless set), on create.
        expect(out?.spec.template.spec.enableServiceLinks).toBe(false);
        ksvc.spec.template.spec.containers.forEach((container, index) => {
          const probe = out?.spec.template.spec.containers[index]?.readinessProbe;
          expect(probe?.successThreshold).toBe(1);
          if (!container.readinessProbe) {
            // The serving container gets a TCP readiness probe (on the queue-proxy's behalf).
            expect(probe?.tcpSocket).toBeDefined();
          } else {
            // manifests/ sets no periodSeconds (issue 25 item 5), and Serving keeps none: the
            // queue-proxy then probes a starting container every few milliseconds. Kubernetes'
            // defaults (failureThreshold, timeoutSeconds) it applies only where a period is set.
            expect(container.readinessProbe.periodSeconds).toBeUndefined();
            expect(probe?.periodSeconds ?? 0).toBe(0);
            expect(probe?.failureThreshold).toBeUndefined();
          }
        });
      }
    });

    it('gets the response-start timeout only where Serving’s default is below timeoutSeconds', () => {
      for (const ksvc of input) {
        const { timeoutSeconds = 300, responseStartTimeoutSeconds } = ksvc.spec.template.spec;
        const expected =
          responseStartTimeoutSeconds ??
          (servingDefaults.responseStartTimeoutSeconds < timeoutSeconds
            ? servingDefaults.responseStartTimeoutSeconds
            : undefined);
        expect({
          name: ksvc.metadata.name,
          responseStartTimeoutSeconds: admitted.get(ksvc.metadata.name)?.spec.template.spec
            .responseStartTimeoutSeconds,
        }).toEqual({ name: ksvc.metadata.name, responseStartTimeoutSeconds: expected });
      }
    });
  });

  it("leaves the bounds to Serving's code: the CRD schema has no maximum for them", async () => {
    const schema = await run([
      'get',
      'crd',
      'services.serving.knative.dev',
      '-o',
      'jsonpath={.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.template.properties.spec.properties}',
    ]);
    const properties = JSON.parse(schema.stdout) as Record<string, Record<string, unknown>>;
    expect(properties.timeoutSeconds).toBeDefined();
    expect(properties.timeoutSeconds).not.toHaveProperty('maximum');
    expect(properties.containerConcurrency).toBeDefined();
    expect(properties.containerConcurrency).not.toHaveProperty('maximum');
  });

  it('rejects a timeoutSeconds above max-revision-timeout-seconds with Knative’s message', async () => {
    const over = servingDefaults.maxRevisionTimeoutSeconds + 1;
    const { refusal } = await dryRun([withTemplateSpec({ timeoutSeconds: over })]);
    expect(refusal).toContain(denial('validation.webhook.serving.knative.dev'));
    expect(refusal).toContain(
      `expected 0 <= ${over} <= ${servingDefaults.maxRevisionTimeoutSeconds}: spec.template.spec.timeoutSeconds`,
    );
    // At the limit: admitted.
    expect((await dryRun([withTemplateSpec({ timeoutSeconds: 600 })])).refusal).toBe('');
  });

  it('rejects a containerConcurrency above the maximum with Knative’s message', async () => {
    const over = servingDefaults.maxConcurrency + 1;
    const { refusal } = await dryRun([withTemplateSpec({ containerConcurrency: over })]);
    expect(refusal).toContain(denial('validation.webhook.serving.knative.dev'));
    expect(refusal).toContain(
      `expected 0 <= ${over} <= ${servingDefaults.maxConcurrency}: spec.template.spec.containerConcurrency`,
    );
  });

  it('rejects a ksvc whose pod the API server would refuse: Serving dry-runs the pod first', async () => {
    const { refusal } = await dryRun([withTemplateSpec({ serviceAccountName: 'nobody' })]);
    expect(refusal).toContain(denial('validation.webhook.serving.knative.dev'));
    expect(refusal).toContain('dry run failed with pods "dry-run-validation" is forbidden');
    expect(refusal).toContain('serviceaccount "nobody" not found');
  });

  it('takes the limit from config-defaults, whose values its config webhook validates', async () => {
    const patch = (data: Record<string, string | null>) =>
      run([
        '-n',
        servingNamespace,
        'patch',
        'configmap',
        'config-defaults',
        '--type',
        'merge',
        '-p',
        JSON.stringify({ data }),
      ]);
    const badValue = await patch({ 'max-revision-timeout-seconds': 'ten minutes' });
    expect(badValue.code).not.toBe(0);
    expect(badValue.stderr).toContain(denial('config.webhook.serving.knative.dev'));
    expect(badValue.stderr).toContain('ten minutes');

    const longer = withTemplateSpec({ timeoutSeconds: 900 });
    expect((await patch({ 'max-revision-timeout-seconds': '900' })).code).toBe(0);
    try {
      // The webhook watches its ConfigMaps: the new limit applies once its informer sees it.
      await waitFor(async () => ((await dryRun([longer])).refusal === '' ? true : undefined), {
        what: 'Serving to admit timeoutSeconds 900 under max-revision-timeout-seconds 900',
        timeoutMs: 30_000,
        intervalMs: 500,
      });
    } finally {
      expect((await patch({ 'max-revision-timeout-seconds': null })).code).toBe(0);
    }
    await waitFor(
      async () => ((await dryRun([longer])).refusal.includes('expected 0 <= 900 <= 600') ? true : undefined),
      {
        what: 'Serving to refuse timeoutSeconds 900 again under the default maximum',
        timeoutMs: 30_000,
        intervalMs: 500,
      },
    );
  });
});
