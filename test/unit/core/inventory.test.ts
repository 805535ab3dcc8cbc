import { decode } from 'ini';
import { renderHostsIni } from '../../../shared/core/inventory.js';
import type { ResolvedNode } from '../../../shared/schemas/node.js';

const node = (label: string, roles: ResolvedNode['roles'], ip: string): ResolvedNode => ({
  label,
  roles,
  mac: '08:00:27:00:00:01',
  ip,
  source: 'host-nics',
});

describe('renderHostsIni', () => {
  const nodes = [node('master-1', ['master'], '10.10.10.11'), node('worker-1', ['worker'], '10.10.10.12')];

  it('writes the contract example byte for byte', () => {
    expect(renderHostsIni({ clusterType: 'baremetal', nodes })).toBe(
      [
        '[all]',
        'master-1  ansible_ssh_host=10.10.10.11 ansible_ssh_port=22',
        'worker-1  ansible_ssh_host=10.10.10.12 ansible_ssh_port=22',
        '',
        '[kube-master]',
        'master-1',
        '',
        '[kube-node]',
        'worker-1',
        '',
        '[etcd]',
        'master-1',
        '',
        '[ovn-central]',
        'master-1',
        '',
        '[ovn-controller]',
        'worker-1',
        '',
        '[virtlet]',
        'worker-1',
        '',
        '[k8s-cluster:children]',
        'kube-node',
        'kube-master',
        '',
      ].join('\n'),
    );
  });

  it('parses back with an INI reader into the same sections and hosts', () => {
    const parsed = decode(renderHostsIni({ clusterType: 'baremetal', nodes }));
    expect(Object.keys(parsed)).toEqual([
      'all',
      'kube-master',
      'kube-node',
      'etcd',
      'ovn-central',
      'ovn-controller',
      'virtlet',
      'k8s-cluster:children',
    ]);
    // `ini` reads "label  key=value key=value" as one key up to the first '='.
    expect(Object.keys(parsed.all as object)).toEqual([
      'master-1  ansible_ssh_host',
      'worker-1  ansible_ssh_host',
    ]);
    expect((parsed.all as Record<string, string>)['worker-1  ansible_ssh_host']).toBe(
      '10.10.10.12 ansible_ssh_port=22',
    );
    expect(Object.keys(parsed['kube-node'] as object)).toEqual(['worker-1']);
    expect(Object.keys(parsed['k8s-cluster:children'] as object)).toEqual(['kube-node', 'kube-master']);
  });

  it('drops the OVN and Virtlet sections and logs in as root for Virtlet VMs', () => {
    const text = renderHostsIni({ clusterType: 'virtlet-vm', nodes });
    expect(text).toContain(
      'master-1  ansible_ssh_host=10.10.10.11 ansible_ssh_port=22 ansible_ssh_user=root\n',
    );
    expect(Object.keys(decode(text))).toEqual([
      'all',
      'kube-master',
      'kube-node',
      'etcd',
      'k8s-cluster:children',
    ]);
  });

  it('writes the Virtlet lines for KubeVirt VMs too (contract section 14)', () => {
    expect(renderHostsIni({ clusterType: 'kubevirt-vm', nodes })).toBe(
      renderHostsIni({ clusterType: 'virtlet-vm', nodes }),
    );
    expect(renderHostsIni({ clusterType: 'kubevirt-vm', nodes })).not.toBe(
      renderHostsIni({ clusterType: 'baremetal', nodes }),
    );
  });

  it('lists masters that are also workers in [kube-node] in worker order, once in [all]', () => {
    const text = renderHostsIni({
      clusterType: 'baremetal',
      nodes: [node('m1', ['master', 'worker'], '10.0.0.1'), node('w1', ['worker'], '10.0.0.2')],
      workerOrder: ['w1', 'm1'],
    });
    expect(text.match(/ansible_ssh_host/g)).toHaveLength(2);
    expect(text).toContain('[kube-node]\nw1\nm1\n\n');
    expect(text).toContain('[ovn-controller]\nw1\nm1\n\n');
    expect(text).not.toMatch(/password/i);
  });
});
