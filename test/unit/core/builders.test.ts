import { buildClusterConfigMap } from '../../../shared/core/cluster-configmap.js';
import { sha256Hex } from '../../../shared/core/hash.js';
import { buildInventoryConfigMap } from '../../../shared/core/inventory-configmap.js';
import { buildKudJob, kudInstallerScript } from '../../../shared/core/kud-job.js';
import type { ResolvedNode } from '../../../shared/schemas/node.js';

const owner = { name: 'prov-a', namespace: 'bpa', uid: 'uid-1' };
const ownerReference = {
  apiVersion: 'bpa.akraino.org/v1alpha1',
  kind: 'Provisioning',
  name: 'prov-a',
  uid: 'uid-1',
  controller: true,
  blockOwnerDeletion: true,
};

describe('sha256Hex', () => {
  it('hashes UTF-8 text to lower-case hex', () => {
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

describe('buildInventoryConfigMap', () => {
  it('stores hosts.ini in <cluster>-inventory, labelled and owned', () => {
    expect(buildInventoryConfigMap(owner, 'c1', '[all]\n')).toEqual({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'c1-inventory',
        namespace: 'bpa',
        labels: { cluster: 'c1' },
        ownerReferences: [ownerReference],
      },
      data: { 'hosts.ini': '[all]\n' },
    });
  });
});

describe('buildClusterConfigMap', () => {
  const node = (label: string, roles: ResolvedNode['roles'], ip: string): ResolvedNode => ({
    label,
    roles,
    ip,
    mac: '08:00:27:00:00:01',
    source: 'dhcp-leases',
  });

  it('maps MASTER_/WORKER_ keys to IPs, both keys for a node in both roles', () => {
    const configMap = buildClusterConfigMap(owner, 'c1', [
      node('m1', ['master', 'worker'], '10.0.0.1'),
      node('w1', ['worker'], '10.0.0.2'),
    ]);
    expect(configMap.metadata).toEqual({
      name: 'c1-configmap',
      namespace: 'bpa',
      labels: { cluster: 'c1' },
      ownerReferences: [ownerReference],
    });
    expect(Object.entries(configMap.data ?? {})).toEqual([
      ['MASTER_m1', '10.0.0.1'],
      ['WORKER_m1', '10.0.0.1'],
      ['WORKER_w1', '10.0.0.2'],
    ]);
  });
});

describe('buildKudJob', () => {
  const job = buildKudJob(
    {
      owner,
      cluster: 'c1',
      inventorySha256: 'a'.repeat(64),
      podSubnet: '10.244.0.0/16',
      kudPlugins: ['onap4k8s'],
    },
    { image: 'registry.local/kud:1', activeDeadlineSeconds: 600, sshKeySecret: 'my-key' },
  );
  const pod = job.spec?.template.spec;
  const container = pod?.containers[0];

  it('names, labels and annotates the Job in the functions’ namespace, tied to its Provisioning by uid', () => {
    expect(job.metadata).toEqual({
      name: 'kud-c1',
      namespace: 'bpa-system',
      labels: {
        cluster: 'c1',
        'app.kubernetes.io/managed-by': 'bpa-functions',
        'bpa.akraino.org/provisioning-uid': owner.uid,
      },
      annotations: {
        'bpa.akraino.org/inventory-sha256': 'a'.repeat(64),
        'bpa.akraino.org/provisioning-namespace': 'bpa',
        'bpa.akraino.org/provisioning-name': owner.name,
      },
    });
    expect(pod?.automountServiceAccountToken).toBe(false);
    expect(
      buildKudJob({ owner, cluster: 'c1', inventorySha256: 'a'.repeat(64) }, { functionsNamespace: 'ops' })
        .metadata?.namespace,
    ).toBe('ops');
    expect(job.spec).toMatchObject({ backoffLimit: 0, activeDeadlineSeconds: 600 });
  });

  it('runs the installer privileged on the host network with the options given', () => {
    expect(pod).toMatchObject({ hostNetwork: true, restartPolicy: 'Never' });
    expect(container).toMatchObject({
      name: 'kud',
      image: 'registry.local/kud:1',
      imagePullPolicy: 'IfNotPresent',
      securityContext: { privileged: true, runAsUser: 0 },
      command: ['/bin/sh', '-c'],
      envFrom: [{ configMapRef: { name: 'kud-installer', optional: true } }],
    });
    expect(container?.args).toHaveLength(1);
    expect(pod?.volumes).toEqual([
      { name: 'multi-cluster', hostPath: { path: '/opt/kud/multi-cluster' } },
      {
        name: 'ssh-key',
        secret: {
          secretName: 'my-key',
          items: [
            { key: 'id_rsa', path: 'id_rsa' },
            { key: 'id_rsa.pub', path: 'id_rsa.pub' },
          ],
        },
      },
      { name: 'inventory', configMap: { name: 'c1-inventory' } },
    ]);
    expect(container?.volumeMounts?.find((m) => m.name === 'ssh-key')?.mountPath).toBe('/.ssh');
  });

  it('uses the documented defaults', () => {
    const plain = buildKudJob({ owner, cluster: 'c1', inventorySha256: 'b'.repeat(64) });
    expect(plain.spec?.activeDeadlineSeconds).toBe(7200);
    expect(plain.spec?.template.spec?.containers[0]?.image).toBe('ghcr.io/bpa-functions/kud-stand-in:0.1.0');
    expect(plain.spec?.template.spec?.volumes?.[1]?.secret?.secretName).toBe('ssh-key-secret');
  });

  it('builds the installer line: copy inventory, install key, then cluster, network, plugins in that order', () => {
    expect(kudInstallerScript('c1')).toBe(
      'set -e; mkdir -p /opt/kud/multi-cluster/c1; cp /etc/kud-inventory/hosts.ini /opt/kud/multi-cluster/c1/hosts.ini; ' +
        'cp -r /.ssh /root/; chmod -R 600 /root/.ssh; ./installer --cluster c1',
    );
    expect(kudInstallerScript('c1', '10.0.0.0/8', [])).toMatch(
      /\.\/installer --cluster c1 --network 10\.0\.0\.0\/8$/,
    );
    expect(kudInstallerScript('c1', null, ['a', 'b'])).toMatch(/\.\/installer --cluster c1 --plugins a b$/);
    expect(container?.args?.[0]).toMatch(
      /\.\/installer --cluster c1 --network 10\.244\.0\.0\/16 --plugins onap4k8s$/,
    );
  });
});
