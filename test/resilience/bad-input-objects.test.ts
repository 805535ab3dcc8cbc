/**
 * Bad input, resources: hostile Provisionings and Softwares applied to the real API server and
 * handed to host-lookup / software-install. Each one is refused by the API server with a 4xx and
 * a message (CRD schema), or accepted and then marked Ready=False by the function with a reason
 * that blames the input and a message; no 5xx, no SSH session, nothing derived (Job, ConfigMap).
 *
 * The world is ready, so that refusing the input is the only way to pass: the BareMetalHosts for
 * the Provisioning's MACs exist (their NICs give IPs), the Software's cluster has its ConfigMap on
 * a real sshd host, and the undamaged objects are shown to launch a Job and to install over SSH.
 * "HostNotFound" or "ClusterNotReady" is therefore never an acceptable outcome. Damage that leaves
 * an object valid by the contract (the test's own reading of contract.md, not the product's
 * schemas) is skipped: such an object is allowed to proceed.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiException, BatchV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import fc from 'fast-check';
import { useTestCluster } from '../support/cluster.js';
import { type SshHosts } from '../support/sshd.js';
import { startNodeSshHosts } from '../support/node-lab-hosts.js';
import { describeOnNode } from '../support/node.js';
import { sourceEvent } from '../integration/functions/support/chain-harness.js';
import {
  bpaGroup,
  createBareMetalHost,
  createReadyProvisioning,
} from '../integration/functions/support/fixtures.js';
import { FaultTally } from './report/tally.js';
import { FaultyChain, conditionsOf } from './support/faulty-chain.js';
import { damage, hostileString, resilienceSeed, show, withField } from './support/hostile.js';
import { prepareNamespace } from './support/lab-cluster.js';

const cluster = useTestCluster();
const tally = new FaultTally(import.meta.url);
const objectsPerKind = 150;
const masterMac = 'aa:bb:cc:dd:ee:01';
const workerMac = 'aa:bb:cc:dd:ee:02';

/**
 * Reasons that blame the object itself. Anything else (HostNotFound, ClusterNotReady, ...) would
 * mean the input got past validation and the world stopped it.
 */
const inputReasons = new Set([
  'InvalidProvisioning',
  'InvalidMacAddress',
  'MacAddressMissing',
  'MastersMissing',
  'DuplicateNodeLabel',
  'DuplicateMacAddress',
  'InvalidSoftware',
  'InvalidSoftwareItem',
  'InvalidPackageName',
  'InvalidPackageVersion',
]);

// The contract's rules (contract.md sections 2 and 7), written here independently of shared/schemas.
const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const clusterName = (v: unknown) =>
  typeof v === 'string' && v.length <= 59 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(v);
const mac = (v: unknown) =>
  typeof v === 'string' && /^[0-9a-f]{2}([:-])[0-9a-f]{2}(\1[0-9a-f]{2}){4}$/i.test(v.trim());
const nodeLabel = (v: string) => /^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/.test(v);
const nodeList = (v: unknown, required: boolean) =>
  v === undefined || v === null
    ? !required
    : Array.isArray(v) &&
      (!required || v.length > 0) &&
      v.every((entry) => {
        if (!isPlainObject(entry) || Object.keys(entry).length !== 1) return false;
        const [[label, node]] = Object.entries(entry) as [[string, unknown]];
        return nodeLabel(label) && isPlainObject(node) && mac(node['mac-address']);
      });
const cidr = (v: unknown) => {
  if (typeof v !== 'string') return false;
  const [address, prefix, ...rest] = v.split('/');
  const family = isIP(address ?? '');
  return (
    rest.length === 0 &&
    family !== 0 &&
    /^\d{1,3}$/.test(prefix ?? '') &&
    Number(prefix) <= (family === 4 ? 32 : 128)
  );
};
const optionalListOf = (v: unknown, item: (x: unknown) => boolean) =>
  v === undefined || v === null || (Array.isArray(v) && v.every(item));

function validProvisioning(value: unknown): boolean {
  if (!isPlainObject(value) || !isPlainObject(value.metadata) || !isPlainObject(value.spec)) return false;
  const labels = value.metadata.labels;
  const spec = value.spec;
  return (
    isPlainObject(labels) &&
    clusterName(labels.cluster) &&
    nodeList(spec.masters, true) &&
    nodeList(spec.workers, false) &&
    optionalListOf(spec.KUDPlugins, (p) => typeof p === 'string' && /^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(p)) &&
    (spec.PodSubnet === undefined || spec.PodSubnet === null || cidr(spec.PodSubnet))
  );
}

const packageName = (v: unknown) =>
  typeof v === 'string' && v.length <= 256 && /^[a-z0-9][a-z0-9+.-]*$/.test(v);
const packageVersion = (v: unknown) =>
  typeof v === 'string' && v.length <= 256 && /^[A-Za-z0-9.+~:-]+$/.test(v);
const softwareItem = (v: unknown) =>
  packageName(v) ||
  (isPlainObject(v) &&
    Object.keys(v).length === 1 &&
    Object.entries(v).every(
      ([name, spec]) => packageName(name) && isPlainObject(spec) && packageVersion(spec.version),
    ));

function validSoftware(value: unknown): boolean {
  if (!isPlainObject(value) || !isPlainObject(value.metadata) || !isPlainObject(value.spec)) return false;
  const labels = value.metadata.labels;
  return (
    isPlainObject(labels) &&
    clusterName(labels.cluster) &&
    optionalListOf(value.spec.masterSoftware, softwareItem) &&
    optionalListOf(value.spec.workerSoftware, softwareItem)
  );
}

describeOnNode('hostile resources through the API server and the functions', () => {
  let lab: SshHosts;
  let chain: FaultyChain;
  let dir: string;

  beforeAll(async () => {
    lab = await startNodeSshHosts({ count: 1 });
    dir = await mkdtemp(join(tmpdir(), 'bpa-bad-objects-'));
    const { knownHostsPath } = await prepareNamespace(cluster.kubeConfig, cluster.namespace, lab, dir);
    // The Provisioning's hosts: both MACs are BareMetalHosts whose NICs resolve to the lab host.
    for (const [name, mac] of [
      ['hostile-master', masterMac],
      ['hostile-worker', workerMac],
    ] as const)
      await createBareMetalHost(cluster.kubeConfig, {
        name,
        namespace: cluster.namespace,
        bootMac: mac,
        nics: [{ name: 'eth0', mac, ip: lab.hosts[0]!.ip }],
      });
    // The Software's cluster is ready: its ConfigMap names the lab host, one node both master and worker.
    await createReadyProvisioning(cluster.kubeConfig, cluster.namespace, 'target');
    await cluster.kubeConfig.makeApiClient(CoreV1Api).createNamespacedConfigMap({
      namespace: cluster.namespace,
      body: {
        metadata: { name: 'target-configmap', labels: { cluster: 'target' } },
        data: { MASTER_m: lab.hosts[0]!.ip, WORKER_m: lab.hosts[0]!.ip },
      },
    });
    chain = new FaultyChain({
      kubeConfig: cluster.kubeConfig,
      retries: 0,
      env: {
        BMH_NAMESPACE: cluster.namespace,
        SWEEP_NAMESPACES: cluster.namespace,
        IP_SOURCES: 'nics',
        SSH_USER: lab.username,
        SSH_PORT: String(lab.port),
        SSH_KNOWN_HOSTS: knownHostsPath,
      },
    });
    await chain.start();
  }, 120_000);

  afterAll(async () => {
    await chain?.stop();
    await lab?.stopAll();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function applyAndHandle(plural: 'provisionings' | 'softwares', body: unknown, index: number) {
    const api = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    const name = `hostile-${plural}-${index}`;
    const object = withField(
      withField(body, ['metadata', 'name'], name),
      ['metadata', 'namespace'],
      cluster.namespace,
    );
    let stored: { apiVersion: string; kind: string; metadata: { name: string; namespace: string } };
    try {
      stored = (await api.createNamespacedCustomObject({
        ...bpaGroup,
        plural,
        namespace: cluster.namespace,
        body: object as object,
      })) as typeof stored;
    } catch (error) {
      if (error instanceof ApiException && error.code >= 400 && error.code < 500) {
        const message = String((JSON.parse(String(error.body)) as { message?: string }).message ?? '');
        return { outcome: `API ${error.code}`, ok: message.length > 10, detail: message };
      }
      throw error;
    }
    const deliveries = await chain.publish(sourceEvent('add', stored));
    if (deliveries.some((d) => d.status >= 500))
      return { outcome: '5xx', ok: false, detail: deliveries.map((d) => d.body).join(' ') };
    const conditions = await conditionsOf(cluster.kubeConfig, plural, cluster.namespace, name);
    const failed = conditions.find(
      (c) => c.type === 'Ready' && c.status === 'False' && (c.message ?? '').length > 10,
    );
    return {
      outcome: failed ? `False ${failed.reason}` : 'no False condition',
      ok: failed !== undefined && inputReasons.has(failed.reason ?? ''),
      detail: JSON.stringify(conditions),
    };
  }

  /**
   * What the derived world looks like: Jobs and ConfigMaps in the namespace and in the functions'
   * namespace (where the KUD Job runs and its inventory is mounted: contract section 12), SSH sessions.
   */
  async function derived() {
    const batch = cluster.kubeConfig.makeApiClient(BatchV1Api);
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    const names = (items: { metadata?: { name?: string } }[]) => items.map((i) => i.metadata?.name).sort();
    const inBoth = async <T>(list: (namespace: string) => Promise<{ items: T[] }>) => [
      ...(await list(cluster.namespace)).items,
      ...(await list(chain.functionsNamespace)).items,
    ];
    return {
      jobs: names(await inBoth((namespace) => batch.listNamespacedJob({ namespace }))),
      // Derived ConfigMaps carry the cluster label (kube-root-ca.crt, made by a controller, does not).
      configMaps: names(
        await inBoth((namespace) => core.listNamespacedConfigMap({ namespace, labelSelector: 'cluster' })),
      ),
      sessions: lab.hosts[0]!.commands().length,
    };
  }

  const provisioning = {
    apiVersion: 'bpa.akraino.org/v1alpha1',
    kind: 'Provisioning',
    metadata: { name: 'x', labels: { cluster: 'hostile' } },
    spec: {
      masters: [{ 'master-1': { 'mac-address': masterMac } }],
      workers: [{ 'worker-1': { 'mac-address': workerMac } }],
      KUDPlugins: ['emco'],
      PodSubnet: '10.244.0.0/16',
    },
  };
  // The ready cluster: a valid Software installs (see the control below).
  const software = {
    apiVersion: 'bpa.akraino.org/v1alpha1',
    kind: 'Software',
    metadata: { name: 'x', labels: { cluster: 'target' } },
    spec: { masterSoftware: ['htop', { curl: { version: '7.88.1' } }], workerSoftware: ['jq'] },
  };

  let before: Awaited<ReturnType<typeof derived>>;

  it('control: in this world the undamaged Provisioning launches its Job and the undamaged Software installs', async () => {
    expect(validProvisioning(provisioning)).toBe(true);
    expect(validSoftware(software)).toBe(true);
    const start = await derived();
    const p = await applyAndHandle('provisionings', provisioning, 0);
    expect(p.outcome).toBe('no False condition');
    const s = await applyAndHandle('softwares', software, 0);
    expect(s.outcome).toBe('no False condition');
    before = await derived();
    // The KUD Job, and the Software's install Job (its pod on the node made the one session).
    expect(before.jobs).toEqual([...start.jobs, 'kud-hostile', 'hostile-softwares-0-install-1'].sort());
    expect(before.configMaps.length).toBeGreaterThan(start.configMaps.length);
    const installed = await conditionsOf(
      cluster.kubeConfig,
      'softwares',
      cluster.namespace,
      'hostile-softwares-0',
    );
    expect(installed.find((c) => c.type === 'Installed')?.status).toBe('True');
    // One session for the host (master and worker lists together).
    expect(before.sessions).toBe(start.sessions + 1);
    expect(lab.hosts[0]!.commands().at(-1)).toContain("'htop' 'curl=7.88.1' 'jq'");
  }, 120_000);

  it.each([
    [
      'provisionings' as const,
      damage(provisioning, {
        required: [
          { path: ['spec', 'masters'], type: 'array' },
          { path: ['spec', 'masters', 0], type: 'object' },
          { path: ['metadata', 'labels', 'cluster'], type: 'string' },
          { path: ['spec', 'PodSubnet'], type: 'string', optional: true },
          { path: ['spec', 'KUDPlugins'], type: 'array', optional: true },
        ],
        text: [
          ['metadata', 'labels', 'cluster'],
          ['spec', 'masters', 0, 'master-1', 'mac-address'],
          ['spec', 'workers', 0, 'worker-1', 'mac-address'],
          ['spec', 'KUDPlugins', 0],
          ['spec', 'PodSubnet'],
        ],
      })
        .map((d) => d.value)
        .filter((value) => !validProvisioning(value)),
    ],
    [
      'softwares' as const,
      fc
        .oneof(
          damage(software, {
            required: [
              { path: ['spec', 'masterSoftware'], type: 'array', optional: true },
              { path: ['spec', 'masterSoftware', 0], type: 'string' },
              { path: ['metadata', 'labels', 'cluster'], type: 'string' },
            ],
            text: [
              ['spec', 'masterSoftware', 0],
              ['spec', 'workerSoftware', 0],
              ['metadata', 'labels', 'cluster'],
            ],
          }).map((d) => d.value),
          hostileString.map((v) =>
            withField(software, ['spec', 'masterSoftware', 1], { curl: { version: v } }),
          ),
          hostileString.map((name) =>
            withField(software, ['spec', 'workerSoftware', 0], { [name]: { version: '1' } }),
          ),
        )
        .filter((value) => !validSoftware(value)),
    ],
  ])(
    'refuses hostile %s with an API 4xx or a False condition blaming the input, never a 5xx, a session or a derived object',
    async (plural, arbitrary) => {
      expect(before).toBeDefined(); // the control ran: the world accepts valid objects
      const outcomes = new Map<string, number>();
      const problems: string[] = [];
      let index = 1;
      await fc.assert(
        fc.asyncProperty(arbitrary as fc.Arbitrary<unknown>, async (body) => {
          const result = await applyAndHandle(plural, body, index++);
          tally.record('Bad input', result.ok);
          outcomes.set(result.outcome, (outcomes.get(result.outcome) ?? 0) + 1);
          if (!result.ok)
            problems.push(`${result.outcome}: ${result.detail.slice(0, 300)} for ${show(body)}`);
        }),
        { seed: resilienceSeed, numRuns: objectsPerKind, endOnFailure: false },
      );
      tally.note(
        `${objectsPerKind} hostile ${plural}: ${[...outcomes.entries()]
          .sort()
          .map(([o, n]) => `${o} ×${n}`)
          .join('; ')}`,
      );
      expect(problems.slice(0, 10)).toEqual([]);
      expect(await derived()).toEqual(before);
    },
    600_000,
  );
});
