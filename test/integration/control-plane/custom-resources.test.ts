/**
 * The CRDs are real: objects of the three kinds the product reads and writes can be created,
 * listed, watched and given a status through the status subresource of a real kube-apiserver.
 */
import { isDeepStrictEqual } from 'node:util';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { CustomObjectsApi, Watch } from '@kubernetes/client-node';
import { useTestCluster } from '../../support/cluster.js';

const cluster = useTestCluster();

interface Kind {
  group: string;
  version: string;
  plural: string;
  kind: string;
}
const provisioning: Kind = {
  group: 'bpa.akraino.org',
  version: 'v1alpha1',
  plural: 'provisionings',
  kind: 'Provisioning',
};
const software: Kind = {
  group: 'bpa.akraino.org',
  version: 'v1alpha1',
  plural: 'softwares',
  kind: 'Software',
};
const bareMetalHost: Kind = {
  group: 'metal3.io',
  version: 'v1alpha1',
  plural: 'baremetalhosts',
  kind: 'BareMetalHost',
};

type Resource = KubernetesObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };

const readyCondition = (status: 'True' | 'False', reason: string) => ({
  type: 'Ready',
  status,
  reason,
  message: `cluster is ${reason}`,
  lastTransitionTime: '2026-01-01T00:00:00Z',
  observedGeneration: 1,
});

/** A Metal3 BareMetalHost with the status fields Metal3's schema requires. */
function bareMetalHostObject(
  name: string,
  bootMac: string,
  nics: { name: string; mac: string; ip: string }[],
) {
  return {
    apiVersion: 'metal3.io/v1alpha1',
    kind: 'BareMetalHost',
    metadata: { name },
    spec: { online: true, bootMACAddress: bootMac },
    status: {
      errorCount: 0,
      errorMessage: '',
      operationalStatus: 'OK',
      poweredOn: true,
      provisioning: { ID: `id-${name}`, state: 'provisioned' },
      provisioningFailCount: 0,
      hardware: { nics },
    },
  };
}

const examples: { kind: Kind; make: (name: string) => Resource; status: Record<string, unknown> }[] = [
  {
    kind: provisioning,
    make: (name) => ({
      apiVersion: 'bpa.akraino.org/v1alpha1',
      kind: 'Provisioning',
      metadata: { name, labels: { cluster: name } },
      spec: {
        masters: [{ 'master-1': { 'mac-address': '00:C6:14:04:61:B2' } }],
        workers: [{ 'master-1': null }, { 'worker-1': { 'mac-address': '00-c6-14-04-61-b3', sriov: true } }],
        KUDPlugins: ['emco'],
        PodSubnet: '10.244.64.0/18',
      },
    }),
    status: {
      conditions: [readyCondition('True', 'KudInstalled')],
      nodes: [
        {
          label: 'master-1',
          roles: ['master', 'worker'],
          mac: '00:c6:14:04:61:b2',
          ip: '10.10.10.11',
          source: 'host-nics',
        },
      ],
      jobName: 'kud-x',
    },
  },
  {
    kind: software,
    make: (name) => ({
      apiVersion: 'bpa.akraino.org/v1alpha1',
      kind: 'Software',
      metadata: { name, labels: { cluster: name } },
      spec: { masterSoftware: ['htop', { jq: { version: '1.6-2.1' } }], workerSoftware: ['curl'] },
    }),
    status: {
      conditions: [readyCondition('False', 'Installing')],
      hosts: [{ node: 'master-1', ip: '10.10.10.11', exitCode: 0, durationMs: 1200 }],
    },
  },
  {
    kind: bareMetalHost,
    make: (name) => {
      const host = bareMetalHostObject(name, '00:c6:14:04:61:b2', []);
      // Created without status: a status written with the object itself is dropped.
      return { ...host, status: undefined };
    },
    status: bareMetalHostObject('x', '00:c6:14:04:61:b2', [
      { name: 'eth0', mac: '00:c6:14:04:61:b2', ip: '10.10.10.11' },
      { name: 'eth1', mac: '00:c6:14:04:61:b9', ip: '' },
    ]).status,
  },
];

function customObjects(kubeConfig: KubeConfig) {
  return kubeConfig.makeApiClient(CustomObjectsApi);
}

/** Starts a watch and collects its events; `until` resolves once `predicate` sees a match. */
async function startWatch(kubeConfig: KubeConfig, path: string, resourceVersion: string) {
  const events: { type: string; object: Resource }[] = [];
  const waiters: { predicate: (e: { type: string; object: Resource }) => boolean; resolve: () => void }[] =
    [];
  const controller = await new Watch(kubeConfig).watch(
    path,
    { resourceVersion, allowWatchBookmarks: false },
    (type, object: Resource) => {
      const event = { type, object };
      events.push(event);
      for (const waiter of waiters) if (waiter.predicate(event)) waiter.resolve();
    },
    () => undefined,
  );
  return {
    events,
    until: (predicate: (e: { type: string; object: Resource }) => boolean) =>
      new Promise<void>((resolve) => {
        if (events.some(predicate)) resolve();
        else waiters.push({ predicate, resolve });
      }),
    stop: () => controller.abort(),
  };
}

describe.each(examples)('$kind.kind', ({ kind, make, status }) => {
  const name = `${kind.plural}-one`;
  const ref = () => ({
    group: kind.group,
    version: kind.version,
    plural: kind.plural,
    namespace: cluster.namespace,
  });

  it('is created, listed, watched and given a status through the status subresource', async () => {
    const api = customObjects(cluster.kubeConfig);
    const initial = (await api.listNamespacedCustomObject(ref())) as {
      metadata: { resourceVersion: string };
      items: Resource[];
    };
    expect(initial.items).toEqual([]);

    const watch = await startWatch(
      cluster.kubeConfig,
      `/apis/${kind.group}/${kind.version}/namespaces/${cluster.namespace}/${kind.plural}`,
      initial.metadata.resourceVersion,
    );
    try {
      const created = (await api.createNamespacedCustomObject({ ...ref(), body: make(name) })) as Resource;
      expect(created.metadata?.uid).toBeTruthy();
      expect(created.status).toBeUndefined();
      expect(created.spec).toMatchObject(make(name).spec ?? {});

      const listed = (await api.listNamespacedCustomObject(ref())) as { items: Resource[] };
      expect(listed.items.map((item) => item.metadata?.name)).toEqual([name]);

      // The status subresource takes status only: a spec change sent along is ignored.
      const withStatus = (await api.replaceNamespacedCustomObjectStatus({
        ...ref(),
        name,
        body: { ...created, spec: { ...created.spec, extra: 'ignored' }, status },
      })) as Resource;
      expect(withStatus.status).toMatchObject(status);
      expect(withStatus.spec).toEqual(created.spec);
      expect(withStatus.metadata?.generation).toBe(created.metadata?.generation);

      // ... and the main endpoint ignores status.
      const replaced = (await api.replaceNamespacedCustomObject({
        ...ref(),
        name,
        body: { ...withStatus, status: { conditions: [] } },
      })) as Resource;
      expect(replaced.status).toEqual(withStatus.status);

      await watch.until((e) => e.type === 'ADDED' && e.object.metadata?.name === name);
      await watch.until(
        (e) => e.type === 'MODIFIED' && isDeepStrictEqual(e.object.status, withStatus.status),
      );
      expect(watch.events[0]?.type).toBe('ADDED');

      await api.deleteNamespacedCustomObject({ ...ref(), name });
      await watch.until((e) => e.type === 'DELETED' && e.object.metadata?.name === name);
    } finally {
      watch.stop();
    }
  });
});

it('finds a BareMetalHost by the MAC of an inspected NIC, as host-lookup will', async () => {
  const api = customObjects(cluster.kubeConfig);
  const ref = {
    group: bareMetalHost.group,
    version: bareMetalHost.version,
    plural: bareMetalHost.plural,
    namespace: cluster.namespace,
  };
  const hosts = [
    bareMetalHostObject('host-a', 'aa:00:00:00:00:01', [
      { name: 'eth0', mac: 'aa:00:00:00:00:01', ip: '10.0.0.1' },
    ]),
    bareMetalHostObject('host-b', 'bb:00:00:00:00:01', [
      { name: 'eth0', mac: 'bb:00:00:00:00:01', ip: '' },
      { name: 'eth1', mac: 'bb:00:00:00:00:02', ip: '10.0.0.2' },
    ]),
  ];
  for (const host of hosts) {
    const created = (await api.createNamespacedCustomObject({
      ...ref,
      body: { ...host, status: undefined },
    })) as Resource;
    await api.replaceNamespacedCustomObjectStatus({
      ...ref,
      name: host.metadata.name,
      body: { ...created, status: host.status },
    });
  }
  const listed = (await api.listNamespacedCustomObject(ref)) as {
    items: { metadata: { name: string }; status?: { hardware?: { nics?: { mac: string; ip: string }[] } } }[];
  };
  const owner = listed.items.find((item) =>
    item.status?.hardware?.nics?.some((nic) => nic.mac === 'bb:00:00:00:00:02'),
  );
  expect(owner?.metadata.name).toBe('host-b');
  expect(owner?.status?.hardware?.nics?.find((nic) => nic.mac === 'bb:00:00:00:00:02')?.ip).toBe('10.0.0.2');
});
