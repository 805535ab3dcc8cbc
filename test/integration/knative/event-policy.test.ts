/**
 * Sender authorization on real Knative Eventing (knative.dev/eventing v0.49.2, built from its Go
 * modules, installed from its own config/): `authentication-oidc: enabled` in config-features and
 * EventPolicies on a Broker (issue 23 item 6; docs/knative.md "Event authorization").
 *
 * A cluster of its own, not the run's: the OIDC flag is Eventing-wide (every ingress then wants a
 * token), so on the shared engine it would refuse the other suites' events. Its control plane
 * names `https://kubernetes.default.svc/openid/v1/jwks` as the issuer's jwks_uri
 * (--service-account-jwks-uri). By default kube-apiserver names its own address: on a control
 * plane that binds loopback only that was https://127.0.0.1:<port>, which no pod reaches (each
 * has its own network namespace), and the ingress then refused every token, valid or not, with
 * 401 (`fetching keys oidc: get keys failed Get "https://127.0.0.1:<port>/openid/v1/jwks": ...
 * connection refused`). The run's control plane now advertises the real node's relay address
 * (10.249.0.1), which pods reach; the first test shows both. The cluster is a real node
 * (local/kubelet-node: containerd, kubelet) with Knative's components from their images
 * (local/knative/real-node.ts) and the suites' test images; everything is Knative's and
 * Kubernetes' code.
 *
 * Senders: the test process with ServiceAccount tokens from the TokenRequest API for the Broker's
 * audience (status.address.audience); Knative's own ApiServerSource and PingSource adapters with
 * their sources' OIDC identities; a pod under a SinkBinding, sending the token Knative mounts at
 * /oidc/token (how the functions could send: manifests/eventing/sink-bindings.yaml).
 */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import {
  CoreV1Api,
  KubernetesObjectApi,
  type KubeConfig,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { z } from 'zod';
import {
  createNamespace,
  projectCrds,
  uniqueNamespaceName,
  waitFor,
} from '../../../local/control-plane/index.js';
import { serviceAccountJwksInCluster } from '../../../local/control-plane/control-plane.js';
import { buildTestImages } from '../../../local/images/test-images.js';
import { knativeNamespace } from '../../../local/knative/install.js';
import { installKnativeOnRealNode } from '../../../local/knative/real-node.js';
import { startRealNodeCluster, type RealNodeCluster } from '../../../local/stack/real-cluster.js';
import { testKubeconfigPath } from '../../support/cluster.js';
import {
  brokerIngressBase,
  createObjects,
  describeOnKnative,
  mtBroker,
  startRecorder,
  waitForKnativeReady,
  type Recorder,
} from '../../support/knative.js';

const discoverySchema = z.looseObject({ issuer: z.string(), jwks_uri: z.string() });

/** The service-account issuer's discovery document, as kube-apiserver serves it. */
function discovery(kubeconfigPath: string) {
  const text = execFileSync(
    'kubectl',
    ['--kubeconfig', kubeconfigPath, 'get', '--raw', '/.well-known/openid-configuration'],
    { encoding: 'utf8' },
  );
  return discoverySchema.parse(JSON.parse(text));
}

const eventPolicy = (name: string, broker: string, from: Record<string, unknown>[]): KubernetesObject =>
  ({
    apiVersion: 'eventing.knative.dev/v1alpha1',
    kind: 'EventPolicy',
    metadata: { name },
    spec: { to: [{ ref: { apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', name: broker } }], from },
  }) as KubernetesObject;

const trigger = (name: string, broker: string, type: string, path: string): KubernetesObject =>
  ({
    apiVersion: 'eventing.knative.dev/v1',
    kind: 'Trigger',
    metadata: { name },
    spec: {
      broker,
      filter: { attributes: { type } },
      subscriber: { ref: { apiVersion: 'v1', kind: 'Service', name: 'recorder' }, uri: path },
      delivery: { retry: 0 },
    },
  }) as KubernetesObject;

const pingSource = (name: string): KubernetesObject =>
  ({
    apiVersion: 'sources.knative.dev/v1',
    kind: 'PingSource',
    metadata: { name },
    spec: {
      schedule: '* * * * *',
      contentType: 'application/json',
      data: '{"sweep":true}',
      sink: { ref: { apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', name: 'guarded' } },
    },
  }) as KubernetesObject;

/**
 * A sender under a SinkBinding, as the functions send (shared/cloudevents/sink-client.ts): every
 * 2 s, once its SinkBinding has given it K_SINK and /oidc/token, a CloudEvent to K_SINK with
 * `Authorization: Bearer <the token>`; it logs each answer's status.
 */
const boundSenderScript = `
const { readFileSync } = require('node:fs');
let n = 0;
setInterval(async () => {
  let token;
  try { token = readFileSync('/oidc/token', 'utf8').trim(); } catch { token = undefined; }
  const sink = process.env.K_SINK;
  if (!sink || !token) return console.log('waiting for K_SINK and /oidc/token');
  const id = 'bound-' + process.pid + '-' + n++;
  const response = await fetch(sink, {
    method: 'POST',
    headers: { 'ce-specversion': '1.0', 'ce-type': 'test.bound', 'ce-source': 'sender', 'ce-id': id,
      'content-type': 'application/json', authorization: 'Bearer ' + token },
    body: '{}',
  }).catch((error) => ({ status: String(error) }));
  console.log(id, response.status);
}, 2000);
`;

const boundSender = (): KubernetesObject[] => {
  const labels = { 'app.kubernetes.io/name': 'sender' };
  return [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'sender' },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            containers: [{ name: 'sender', image: 'bpa.local/test/node:1', args: ['-e', boundSenderScript] }],
          },
        },
      },
    } as KubernetesObject,
    {
      apiVersion: 'sources.knative.dev/v1',
      kind: 'SinkBinding',
      metadata: { name: 'sender-sink' },
      spec: {
        subject: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'sender' },
        sink: { ref: { apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', name: 'guarded' } },
      },
    } as KubernetesObject,
  ];
};

const addressSchema = z.looseObject({
  address: z.looseObject({ url: z.string(), audience: z.string().optional() }).optional(),
  policies: z.array(z.looseObject({ name: z.string() })).optional(),
});

describeOnKnative('EventPolicy with OIDC on real Knative Eventing (a cluster of its own)', () => {
  let cluster: RealNodeCluster | undefined;
  let kubeConfig: KubeConfig;
  let namespace: string;
  let recorder: Recorder;
  const audience: Record<string, string> = {};

  const core = () => kubeConfig.makeApiClient(CoreV1Api);
  const objects = () => KubernetesObjectApi.makeApiClient(kubeConfig);
  const ready = (kind: string, name: string, apiVersion = 'eventing.knative.dev/v1', ns = namespace) =>
    waitForKnativeReady(kubeConfig, { apiVersion, kind, namespace: ns, name }, 240_000);

  /** A token of `serviceAccount` (TokenRequest API) for `forAudience`. */
  const tokenOf = async (serviceAccount: string, forAudience: string, ns = namespace) => {
    const response = await core().createNamespacedServiceAccountToken({
      name: serviceAccount,
      namespace: ns,
      body: { spec: { audiences: [forAudience], expirationSeconds: 600 } },
    });
    const token = response.status?.token;
    if (!token) throw new Error(`no token for ${ns}/${serviceAccount}`);
    return token;
  };

  /** POSTs a binary-mode CloudEvent to a Broker's ingress from the test process. */
  const send = async (broker: string, type: string, id: string, token?: string) =>
    fetch(`${await brokerIngressBase(kubeConfig)}/${namespace}/${broker}`, {
      method: 'POST',
      headers: {
        'ce-specversion': '1.0',
        'ce-type': type,
        'ce-source': 'event-policy.test',
        'ce-id': id,
        'content-type': 'application/json',
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: JSON.stringify({ id }),
    });

  const delivered = (id: string) =>
    waitFor(async () => (await recorder.received()).find((r) => r.headers['ce-id'] === id), {
      what: `the recorder to get ${id}`,
      timeoutMs: 60_000,
      intervalMs: 300,
    });

  beforeAll(async () => {
    const quiet = () => undefined;
    cluster = await startRealNodeCluster({
      crds: projectCrds().inputs,
      serviceAccountJwksUri: serviceAccountJwksInCluster,
      extraImages: buildTestImages({ only: ['event-recorder', 'node'], log: quiet }).map((i) => i.archive),
      log: quiet,
    });
    kubeConfig = cluster.controlPlane.kubeConfig;
    await installKnativeOnRealNode({
      kubeConfig,
      node: cluster.node,
      features: { 'authentication-oidc': 'enabled' },
    });
    namespace = await createNamespace(kubeConfig, uniqueNamespaceName('event-policy'));
    for (const name of ['allowed', 'other', 'watcher'])
      await core().createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
    recorder = await startRecorder(kubeConfig, namespace);
    await createObjects(kubeConfig, namespace, [
      // What the ApiServerSource's adapter runs as (spec.serviceAccountName): it watches ConfigMaps.
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'watcher' },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
      } as KubernetesObject,
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'watcher' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'watcher' },
        subjects: [{ kind: 'ServiceAccount', name: 'watcher', namespace }],
      } as KubernetesObject,
      mtBroker('guarded'),
      mtBroker('open'),
      eventPolicy('only-allowed', 'guarded', [{ sub: `system:serviceaccount:${namespace}:allowed` }]),
      {
        apiVersion: 'sources.knative.dev/v1',
        kind: 'ApiServerSource',
        metadata: { name: 'configmaps' },
        spec: {
          mode: 'Reference',
          serviceAccountName: 'watcher',
          resources: [{ apiVersion: 'v1', kind: 'ConfigMap', selector: { matchLabels: { app: 'watched' } } }],
          sink: { ref: { apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', name: 'guarded' } },
        },
      } as KubernetesObject,
      eventPolicy('from-source', 'guarded', [
        { ref: { apiVersion: 'sources.knative.dev/v1', kind: 'ApiServerSource', name: 'configmaps' } },
      ]),
      // The manifests' sweep is a PingSource (manifests/eventing/sources.yaml): one the policy
      // names, and one it does not.
      pingSource('sweep'),
      pingSource('rogue'),
      eventPolicy('from-pings', 'guarded', [
        { ref: { apiVersion: 'sources.knative.dev/v1', kind: 'PingSource', name: 'sweep' } },
      ]),
      // How the functions could send with a token: their SinkBindings (manifests/eventing/sink-bindings.yaml).
      ...boundSender(),
      eventPolicy('from-binding', 'guarded', [
        { ref: { apiVersion: 'sources.knative.dev/v1', kind: 'SinkBinding', name: 'sender-sink' } },
      ]),
      trigger('guarded', 'guarded', 'test.guarded', '/ok'),
      trigger('bound', 'guarded', 'test.bound', '/bound'),
      trigger('pings', 'guarded', 'dev.knative.sources.ping', '/ping'),
      trigger('open', 'open', 'test.open', '/ok'),
      trigger('from-source', 'guarded', 'dev.knative.apiserver.ref.add', '/source'),
    ]);
    for (const name of ['guarded', 'open']) {
      const status = addressSchema.parse(await ready('Broker', name));
      audience[name] = status.address?.audience ?? '';
    }
    for (const name of ['guarded', 'open', 'from-source', 'pings', 'bound']) await ready('Trigger', name);
    for (const name of ['only-allowed', 'from-source', 'from-pings', 'from-binding'])
      await ready('EventPolicy', name, 'eventing.knative.dev/v1alpha1');
    await ready('ApiServerSource', 'configmaps', 'sources.knative.dev/v1');
    for (const name of ['sweep', 'rogue']) await ready('PingSource', name, 'sources.knative.dev/v1');
    await ready('SinkBinding', 'sender-sink', 'sources.knative.dev/v1');
  }, 900_000);

  afterAll(async () => {
    await cluster?.stop();
  }, 120_000);

  it("the run's control plane names its advertised address as the issuer's jwks_uri; this cluster the in-cluster one", () => {
    const run = discovery(testKubeconfigPath());
    expect(run.issuer).toBe('https://kubernetes.default.svc');
    // The real node's relay address (local/kubelet-node/network.ts kubeletNodeApiAddress).
    expect(run.jwks_uri).toMatch(/^https:\/\/10\.249\.0\.1:\d+\/openid\/v1\/jwks$/);
    const own = discovery(cluster!.controlPlane.kubeconfigPath);
    expect(own).toMatchObject({
      issuer: 'https://kubernetes.default.svc',
      jwks_uri: serviceAccountJwksInCluster,
    });
  });

  it('gives the Broker an audience and lists the policies that apply to it in its status', async () => {
    expect(audience.guarded).toBe(`eventing.knative.dev/broker/${namespace}/guarded`);
    const broker = addressSchema.parse(
      (
        (await objects().read({
          apiVersion: 'eventing.knative.dev/v1',
          kind: 'Broker',
          metadata: { name: 'guarded', namespace },
        })) as { status?: unknown }
      ).status,
    );
    expect(broker.policies?.map((p) => p.name).sort()).toEqual([
      'from-binding',
      'from-pings',
      'from-source',
      'only-allowed',
    ]);
  });

  it('refuses a POST without a token with 401 (`bpa send` without --token-file)', async () => {
    const response = await send('guarded', 'test.guarded', 'no-token');
    expect(response.status).toBe(401);
    // Also where no policy applies: with OIDC on, every Broker wants a token.
    expect((await send('open', 'test.open', 'no-token-open')).status).toBe(401);
  });

  it("accepts the allowed ServiceAccount's token for the Broker's audience, and delivers the event", async () => {
    const response = await send(
      'guarded',
      'test.guarded',
      'allowed-1',
      await tokenOf('allowed', audience.guarded!),
    );
    expect(response.status).toBe(202);
    expect((await delivered('allowed-1')).path).toBe('/ok');
  });

  it("refuses another ServiceAccount's valid token with 403, though the default mode would admit it", async () => {
    const other = await tokenOf('other', audience.guarded!);
    expect((await send('guarded', 'test.guarded', 'other-1', other)).status).toBe(403);
    // On the Broker no policy names, `allow-same-namespace` (config-features' default) admits it.
    const otherForOpen = await tokenOf('other', audience.open!);
    expect((await send('open', 'test.open', 'other-open-1', otherForOpen)).status).toBe(202);
    await delivered('other-open-1');
    // ... and refuses a ServiceAccount of another namespace there.
    const foreign = await tokenOf('default', audience.open!, 'default');
    expect((await send('open', 'test.open', 'foreign-open-1', foreign)).status).toBe(403);
  });

  it("refuses the allowed ServiceAccount's token for another audience with 401", async () => {
    const wrongAudience = await tokenOf('allowed', audience.open!);
    expect((await send('guarded', 'test.guarded', 'wrong-audience-1', wrongAudience)).status).toBe(401);
  });

  it('gives an ApiServerSource an OIDC identity, and its events pass a policy naming the source', async () => {
    const source = (await objects().read({
      apiVersion: 'sources.knative.dev/v1',
      kind: 'ApiServerSource',
      metadata: { name: 'configmaps', namespace },
    })) as { status?: { auth?: { serviceAccountName?: string } } };
    const identity = source.status?.auth?.serviceAccountName;
    expect(identity).toMatch(/^configmaps-oidc-sources\.knative\.dev-apiserversource/);
    const policy = (await objects().read({
      apiVersion: 'eventing.knative.dev/v1alpha1',
      kind: 'EventPolicy',
      metadata: { name: 'from-source', namespace },
    })) as { status?: { from?: string[] } };
    expect(policy.status?.from).toEqual([`system:serviceaccount:${namespace}:${identity}`]);
    await core().createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'watched-1', labels: { app: 'watched' } }, data: { a: '1' } },
    });
    const event = await waitFor(
      async () =>
        (await recorder.received()).find(
          (r) => r.path === '/source' && String(r.headers['ce-subject'] ?? '').endsWith('/watched-1'),
        ),
      { what: "the recorder to get the source's event for watched-1", timeoutMs: 90_000, intervalMs: 500 },
    );
    expect(event.headers['ce-type']).toBe('dev.knative.apiserver.ref.add');
  }, 120_000);

  it("passes the pings of the PingSource a policy names, and refuses (403) another PingSource's", async () => {
    const identity = (name: string) =>
      objects()
        .read({ apiVersion: 'sources.knative.dev/v1', kind: 'PingSource', metadata: { name, namespace } })
        .then(
          (o) =>
            (o as { status?: { auth?: { serviceAccountName?: string } } }).status?.auth?.serviceAccountName,
        );
    expect(await identity('sweep')).toMatch(/^sweep-oidc-sources\.knative\.dev-pingsource/);
    expect(await identity('rogue')).toMatch(/^rogue-oidc-sources\.knative\.dev-pingsource/);
    const sourceOf = (name: string) => `/apis/v1/namespaces/${namespace}/pingsources/${name}`;
    // Once a minute, both at the same tick (mtping, Knative's PingSource adapter, sends them).
    const ping = await waitFor(
      async () =>
        (await recorder.received()).find(
          (r) => r.path === '/ping' && r.headers['ce-source'] === sourceOf('sweep'),
        ),
      { what: "the recorder to get the sweep PingSource's ping", timeoutMs: 150_000, intervalMs: 1000 },
    );
    expect(ping.headers['ce-type']).toBe('dev.knative.sources.ping');
    // The rogue's ping of that tick was refused: mtping logs the ingress' 403 for it.
    const adapter = await core().listNamespacedPod({
      namespace: knativeNamespace,
      labelSelector: 'sources.knative.dev/role=adapter',
    });
    const podName = adapter.items[0]?.metadata?.name ?? '';
    const refused = await waitFor(
      async () => {
        const log = await core().readNamespacedPodLog({ namespace: knativeNamespace, name: podName });
        return log.split('\n').find((line) => line.includes(sourceOf('rogue')) && line.includes('403'));
      },
      { what: "mtping's log to show the rogue ping refused", timeoutMs: 90_000, intervalMs: 1000 },
    );
    expect(refused).toContain('failed to send cloudevent');
    const received = await recorder.received();
    expect(received.filter((r) => r.headers['ce-source'] === sourceOf('rogue'))).toEqual([]);
  }, 300_000);

  it("mounts a SinkBinding's OIDC token in its subject's pods (/oidc/token): sent with it, events pass a policy naming the binding", async () => {
    const binding = (await objects().read({
      apiVersion: 'sources.knative.dev/v1',
      kind: 'SinkBinding',
      metadata: { name: 'sender-sink', namespace },
    })) as { status?: { auth?: { serviceAccountName?: string }; oidcTokenSecretName?: string } };
    expect(binding.status?.auth?.serviceAccountName).toMatch(
      /^sender-sink-oidc-sources\.knative\.dev-sinkbinding/,
    );
    expect(binding.status?.oidcTokenSecretName).toEqual(expect.any(String));
    const event = await waitFor(
      async () =>
        (await recorder.received()).find((r) => r.path === '/bound' && r.headers['ce-source'] === 'sender'),
      { what: "the recorder to get the bound sender's event", timeoutMs: 120_000, intervalMs: 1000 },
    );
    expect(event.headers['ce-type']).toBe('test.bound');
  }, 180_000);
});
