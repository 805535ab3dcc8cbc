/**
 * A Provisioning or Software in a namespace that was not onboarded (docs/adr/0013-tenancy.md
 * point 4): the functions run as their own ServiceAccounts under the shipped RBAC (rendered into
 * this file's namespace with a name prefix, which plays the functions' namespace); the tenant's
 * namespace holds no RoleBinding of manifests/tenant. Each function answers the event 204 (no
 * retry loop), writes nothing there (no status, finalizer, Event or ConfigMap), and logs one warn
 * line naming the command that onboards the namespace. After onboarding, the same event works.
 */
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { definition as hostLookup } from '../../../functions/host-lookup/index.js';
import { definition as softwareInstall } from '../../../functions/software-install/index.js';
import { postEvent } from '../../../shared/cloudevents/sink-client.js';
import { createLogger } from '../../../shared/log.js';
import { startFunctionServer, type RunningFunctionServer } from '../../../shared/server/function-server.js';
import type { FunctionDefinition } from '../../../shared/server/types.js';
import { createNamespace, deleteNamespace, uniqueNamespaceName } from '../../../local/control-plane/index.js';
import { useTestCluster } from '../../support/cluster.js';
import { asServiceAccount } from '../../support/service-account-kubeconfig.js';
import { KubeConfig } from '@kubernetes/client-node';
import { bpaGroup, createProvisioning, provisioningObject } from '../functions/support/fixtures.js';
import { sourceEvent } from '../functions/support/chain-harness.js';
import { rbacTable } from '../../unit/manifests/rbac-table.js';
import { applyRbac, deleteRbac, onboardForRbac } from './rbac-install.js';

const cluster = useTestCluster({ namespacePrefix: 'not-onboarded' });
let prefix = '';
let tenant = '';
const lines: { level: string; msg: string; namespace?: string; command?: string }[] = [];
const servers = new Map<string, RunningFunctionServer>();

beforeAll(async () => {
  prefix = `${cluster.namespace}-`;
  await applyRbac(cluster.kubeconfigPath, cluster.namespace, prefix, []);
  tenant = await createNamespace(cluster.kubeConfig, uniqueNamespaceName('not-onboarded-tenant'));
  for (const definition of [hostLookup, softwareInstall] as FunctionDefinition<unknown>[]) {
    const kubeConfig = await asServiceAccount(
      cluster.kubeConfig,
      cluster.namespace,
      `${prefix}${rbacTable[definition.name]?.serviceAccount}`,
      new KubeConfig(),
    );
    servers.set(
      definition.name,
      await startFunctionServer({
        definition,
        host: '127.0.0.1',
        port: 0,
        kubeConfig,
        env: { FUNCTIONS_NAMESPACE: cluster.namespace, BMH_NAMESPACE: cluster.namespace },
        log: createLogger({ level: 'warn', sink: (line) => lines.push(JSON.parse(line) as (typeof lines)[number]) }),
        tracing: false,
        processMetrics: false,
      }),
    );
  }
}, 120_000);

afterAll(async () => {
  for (const server of servers.values()) await server.close();
  if (prefix) await deleteRbac(cluster.kubeconfigPath, prefix);
  if (tenant) await deleteNamespace(cluster.kubeConfig, tenant);
});

const deliver = async (name: string, event: ReturnType<typeof sourceEvent>) =>
  (await postEvent(servers.get(name)!.url, event, { timeoutMs: 60_000 })).status;

it('host-lookup: 204, nothing written, one warn line naming the onboarding command; onboarded, it works', async () => {
  const created = await createProvisioning(
    cluster.kubeConfig,
    provisioningObject({ name: 'edge', namespace: tenant, cluster: 'not-onboarded-1', masters: [{ label: 'm-1', mac: 'aa:bb:cc:00:0f:01' }] }),
  );
  lines.length = 0;
  expect(await deliver('host-lookup', sourceEvent('add', created))).toBe(204);
  const stored = (await cluster.kubeConfig
    .makeApiClient(CustomObjectsApi)
    .getNamespacedCustomObject({ ...bpaGroup, plural: 'provisionings', namespace: tenant, name: 'edge' })) as {
    metadata: { finalizers?: string[] };
    status?: unknown;
  };
  expect({ status: stored.status, finalizers: stored.metadata.finalizers }).toEqual({ status: undefined, finalizers: undefined });
  expect((await cluster.kubeConfig.makeApiClient(CoreV1Api).listNamespacedEvent({ namespace: tenant })).items).toEqual([]);
  const warned = lines.filter((l) => l.msg === 'namespace not onboarded');
  expect(warned).toEqual([
    expect.objectContaining({ level: 'warn', namespace: tenant, command: `kubectl apply -n ${tenant} -k manifests/tenant` }),
  ]);
  expect(lines.filter((l) => l.level === 'error')).toEqual([]);

  // Onboarded as an operator does: the same event is handled (status written).
  await onboardForRbac(cluster.kubeconfigPath, cluster.namespace, prefix, tenant);
  lines.length = 0;
  expect(await deliver('host-lookup', sourceEvent('add', created))).toBe(200);
  expect(lines.filter((l) => l.msg === 'namespace not onboarded')).toEqual([]);
});
