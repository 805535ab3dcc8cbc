/**
 * Authorisation is real RBAC: a ServiceAccount token from the TokenRequest API authenticates,
 * is refused (403) until a Role grants it something, and then gets exactly that.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { ApiException, CoreV1Api, CustomObjectsApi, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { adminKubeConfig } from '../../../local/control-plane/index.js';
import { useTestCluster } from '../../support/cluster.js';

const cluster = useTestCluster();

/** A client for the same server that authenticates with `token` instead of the admin's. */
function kubeConfigWithToken(token: string): KubeConfig {
  const caData = cluster.kubeConfig.getCurrentCluster()?.caData;
  if (!caData) throw new Error('the test kubeconfig has no CA');
  return adminKubeConfig({ server: cluster.server, caPem: Buffer.from(caData, 'base64').toString(), token });
}

async function serviceAccountToken(name: string): Promise<string> {
  const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespacedServiceAccount({ namespace: cluster.namespace, body: { metadata: { name } } });
  const request = await core.createNamespacedServiceAccountToken({
    name,
    namespace: cluster.namespace,
    body: { spec: { audiences: [], expirationSeconds: 600 } },
  });
  expect(request.status?.token).toBeTruthy();
  return request.status?.token ?? '';
}

const statusCode = (promise: Promise<unknown>) =>
  promise.then(
    () => 200,
    (error: unknown) => (error instanceof ApiException ? error.code : Promise.reject(error)),
  );

const listProvisionings = (kubeConfig: KubeConfig) =>
  kubeConfig.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({
    group: 'bpa.akraino.org',
    version: 'v1alpha1',
    namespace: cluster.namespace,
    plural: 'provisionings',
  });

it('refuses a ServiceAccount without rights with 403, and allows what a RoleBinding grants', async () => {
  const client = kubeConfigWithToken(await serviceAccountToken('no-rights'));
  expect(await statusCode(listProvisionings(client))).toBe(403);
  expect(
    await statusCode(client.makeApiClient(CoreV1Api).listNamespacedSecret({ namespace: cluster.namespace })),
  ).toBe(403);

  const rbac = cluster.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({
    namespace: cluster.namespace,
    body: {
      metadata: { name: 'read-provisionings' },
      rules: [{ apiGroups: ['bpa.akraino.org'], resources: ['provisionings'], verbs: ['get', 'list'] }],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace: cluster.namespace,
    body: {
      metadata: { name: 'no-rights-reads' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-provisionings' },
      subjects: [{ kind: 'ServiceAccount', name: 'no-rights', namespace: cluster.namespace }],
    },
  });
  // RBAC reads bindings from an informer: the grant takes effect within moments, not at once.
  await expect(waitForStatus(() => listProvisionings(client), 200)).resolves.toBe(200);
  expect(
    await statusCode(client.makeApiClient(CoreV1Api).listNamespacedSecret({ namespace: cluster.namespace })),
  ).toBe(403);
});

it('refuses an unknown bearer token with 401', async () => {
  const client = kubeConfigWithToken('not-a-token');
  expect(await statusCode(listProvisionings(client))).toBe(401);
});

async function waitForStatus(call: () => Promise<unknown>, wanted: number): Promise<number> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const code = await statusCode(call());
    if (code === wanted || Date.now() > deadline) return code;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
