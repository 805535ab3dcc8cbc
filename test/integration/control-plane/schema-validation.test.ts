/**
 * The published OpenAPI schemas are enforced by the API server itself: malformed resources are
 * refused with 422 before any function sees them, and every legitimate spelling gets through.
 */
import { ApiException, CustomObjectsApi } from '@kubernetes/client-node';
import { useTestCluster } from '../../support/cluster.js';

const cluster = useTestCluster();
let counter = 0;

function provisioning(spec: Record<string, unknown>) {
  const name = `p-${++counter}`;
  return {
    apiVersion: 'bpa.akraino.org/v1alpha1',
    kind: 'Provisioning',
    metadata: { name, labels: { cluster: name } },
    spec,
  };
}

function software(spec: Record<string, unknown>) {
  const name = `s-${++counter}`;
  return {
    apiVersion: 'bpa.akraino.org/v1alpha1',
    kind: 'Software',
    metadata: { name, labels: { cluster: name } },
    spec,
  };
}

async function create(body: { kind: string; spec: Record<string, unknown> }) {
  const api = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
  return (await api.createNamespacedCustomObject({
    group: 'bpa.akraino.org',
    version: 'v1alpha1',
    namespace: cluster.namespace,
    plural: body.kind === 'Provisioning' ? 'provisionings' : 'softwares',
    body,
  })) as { spec: Record<string, unknown> };
}

/** The API server's refusal: 422 Invalid, with the offending field path in the message. */
async function refusal(body: { kind: string; spec: Record<string, unknown> }): Promise<string> {
  const error = await create(body).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiException);
  const apiError = error as ApiException<string>;
  expect(apiError.code).toBe(422);
  const status = JSON.parse(apiError.body) as { reason: string; message: string };
  expect(status.reason).toBe('Invalid');
  return status.message;
}

const master = (mac: unknown) => ({ 'master-1': { 'mac-address': mac } });

describe('Provisioning schema', () => {
  it.each([
    ['lower case, colons', '00:c6:14:04:61:b2'],
    ['upper case, colons', '00:C6:14:04:61:B2'],
    ['dashes', '00-c6-14-04-61-b2'],
    ['upper case, dashes', '00-C6-14-04-61-B2'],
  ])('accepts a MAC in %s', async (_label, mac) => {
    const created = await create(provisioning({ masters: [master(mac)] }));
    expect(created.spec.masters).toEqual([master(mac)]);
  });

  it.each([
    ['too short', '00:c6:14:04:61'],
    ['not hex', '00:c6:14:04:61:zz'],
    ['no separators', '00c6140461b2'],
    ['a trailing character', '00:c6:14:04:61:b2x'],
  ])('refuses a master MAC that is %s', async (_label, mac) => {
    expect(await refusal(provisioning({ masters: [master(mac)] }))).toContain('mac-address');
  });

  it('refuses a malformed worker MAC', async () => {
    const message = await refusal(
      provisioning({
        masters: [master('00:c6:14:04:61:b2')],
        workers: [{ 'worker-1': { 'mac-address': 'nope' } }],
      }),
    );
    expect(message).toContain('spec.workers[0].worker-1.mac-address');
  });

  it('accepts a null worker (a master that is also a worker) and the hardware fields (cpu, memory: the preflight)', async () => {
    const spec = {
      masters: [{ 'master-1': { 'mac-address': '00:c6:14:04:61:b2', cpu: 4, memory: '8Gi' } }],
      workers: [
        { 'master-1': null },
        { 'worker-1': { 'mac-address': '00:c6:14:04:61:b3', sriov: true, qat: false } },
      ],
      KUDPlugins: ['emco', 'onap4k8s'],
      PodSubnet: '10.244.64.0/18',
    };
    expect((await create(provisioning(spec))).spec).toEqual(spec);
  });

  it.each([
    ['KUDPlugins is a string', { KUDPlugins: 'emco' }, 'spec.KUDPlugins'],
    ['a KUDPlugins item is a number', { KUDPlugins: [7] }, 'spec.KUDPlugins[0]'],
    ['PodSubnet is a number', { PodSubnet: 10 }, 'spec.PodSubnet'],
    ['masters is a map', { masters: { 'master-1': { 'mac-address': '00:c6:14:04:61:b2' } } }, 'spec.masters'],
    ['a master entry is a string', { masters: ['master-1'] }, 'spec.masters[0]'],
    ['a master entry has two nodes', { masters: [{ a: {}, b: {} }] }, 'spec.masters[0]'],
    ['cpu is a string', { masters: [{ m: { 'mac-address': '00:c6:14:04:61:b2', cpu: 'four' } }] }, 'cpu'],
    ['cpu is zero', { masters: [{ m: { 'mac-address': '00:c6:14:04:61:b2', cpu: 0 } }] }, 'cpu'],
  ])('refuses a wrong type: %s', async (_label, spec, field) => {
    expect(await refusal(provisioning(spec))).toContain(field);
  });
});

describe('Software schema', () => {
  it('accepts package names and {package: {version}} maps', async () => {
    const spec = {
      masterSoftware: ['htop', { jq: { version: '1.6-2.1+deb12u1' } }],
      workerSoftware: ['libstdc++6', 'python3.11'],
    };
    expect((await create(software(spec))).spec).toEqual(spec);
  });

  it.each([
    ['an upper-case package name', { masterSoftware: ['HTOP'] }, 'spec.masterSoftware[0]'],
    ['a name with a shell character', { workerSoftware: ['htop;reboot'] }, 'spec.workerSoftware[0]'],
    ['a map with two packages', { masterSoftware: [{ a: {}, b: {} }] }, 'spec.masterSoftware[0]'],
    ['a list that is a string', { masterSoftware: 'htop' }, 'spec.masterSoftware'],
  ])('refuses %s', async (_label, spec, field) => {
    expect(await refusal(software(spec))).toContain(field);
  });
});
