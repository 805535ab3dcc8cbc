/**
 * manifests/leases-publisher (docs/deploy.md "Leases on a real cluster"): what it installs beside
 * Ironic, and its sidecar patch applied by kustomize to a Deployment of Metal3's Ironic shape
 * (test/fixtures/metal3/ironic-deployment.yaml, not Metal3's own file). The publisher itself, its
 * RBAC on a real API server, dnsmasq and a DHCP client: test/integration/leases/.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { jobEntryPoints } from '../../../scripts/bundle/job-entry-points.mjs';
import { kustomize, manifestsDir, parseObjects, repoRoot } from './kustomize.js';

const dir = join(manifestsDir, 'leases-publisher');

interface Container {
  name: string;
  image?: string;
  command?: string[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}
interface Deployment {
  kind: string;
  spec: {
    template: {
      spec: {
        serviceAccountName?: string;
        containers: Container[];
        volumes: { name: string; emptyDir?: object }[];
      };
    };
  };
}

/** The Ironic fixture with the patch and an `images:` entry, as an operator's kustomization would. */
function patchedIronic(): Deployment {
  const overlay = mkdtempSync(join(tmpdir(), 'bpa-ironic-'));
  try {
    cpSync(join(repoRoot, 'test/fixtures/metal3/ironic-deployment.yaml'), join(overlay, 'ironic.yaml'));
    cpSync(join(dir, 'ironic-sidecar-patch.yaml'), join(overlay, 'patch.yaml'));
    writeFileSync(
      join(overlay, 'kustomization.yaml'),
      [
        'apiVersion: kustomize.config.k8s.io/v1beta1',
        'kind: Kustomization',
        'resources: [ironic.yaml]',
        'patches: [{ path: patch.yaml }]',
        'images: [{ name: ghcr.io/bpa-functions/host-lookup, newName: registry.example/host-lookup, newTag: "1.2.3" }]',
        '',
      ].join('\n'),
    );
    const [deployment] = parseObjects(kustomize(overlay));
    return deployment as unknown as Deployment;
  } finally {
    rmSync(overlay, { recursive: true, force: true });
  }
}

describe('manifests/leases-publisher', () => {
  const objects = parseObjects(kustomize(dir));
  const byName = (kind: string, name: string) =>
    objects.find((o) => o.kind === kind && o.metadata.name === name) as
      | (Record<string, unknown> & { metadata: { namespace?: string } })
      | undefined;

  it('installs in Ironic’s namespace a ConfigMap with no data, and an account that may only patch it', () => {
    expect(new Set(objects.map((o) => o.metadata.namespace))).toEqual(new Set(['baremetal-operator-system']));
    expect(byName('ConfigMap', 'bpa-dhcp-leases')?.data).toBeUndefined();
    expect(byName('Role', 'bpa-leases-publisher')?.rules).toEqual([
      { apiGroups: [''], resources: ['configmaps'], resourceNames: ['bpa-dhcp-leases'], verbs: ['patch'] },
    ]);
    expect(byName('RoleBinding', 'bpa-leases-publisher')?.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'bpa-leases-publisher', namespace: 'baremetal-operator-system' },
    ]);
    expect(byName('Role', 'bpa-functions:host-lookup-leases')?.rules).toEqual([
      { apiGroups: [''], resources: ['configmaps'], resourceNames: ['bpa-dhcp-leases'], verbs: ['get'] },
    ]);
    expect(byName('RoleBinding', 'bpa-functions:host-lookup-leases')?.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'host-lookup', namespace: 'bpa-system' },
    ]);
  });

  it('the sidecar patch: dnsmasq’s lease directory shared read-only with the publisher, in host-lookup’s image', () => {
    const pod = patchedIronic().spec.template.spec;
    expect(pod.serviceAccountName).toBe('bpa-leases-publisher');
    expect(pod.containers.map((c) => c.name).sort()).toEqual(['bpa-leases-publisher', 'ironic', 'ironic-dnsmasq']);
    const named = (name: string) => pod.containers.find((c) => c.name === name) as Container;
    const [dnsmasq, ironic, sidecar] = ['ironic-dnsmasq', 'ironic', 'bpa-leases-publisher'].map(named) as [
      Container,
      Container,
      Container,
    ];
    // Metal3's own parts kept: the dnsmasq command and its /shared mount.
    expect(dnsmasq.command).toEqual(['/bin/rundnsmasq']);
    // Strategic merge orders merged lists as it likes: compared as sets.
    const sorted = <T extends { name: string }>(list: T[] | undefined) =>
      [...(list ?? [])].sort((a, b) => a.name.localeCompare(b.name));
    expect(sorted(dnsmasq.volumeMounts)).toEqual([
      { mountPath: '/var/lib/dnsmasq', name: 'dnsmasq-leases' },
      { mountPath: '/shared', name: 'ironic-data-volume' },
    ]);
    expect(ironic.volumeMounts).toEqual([{ mountPath: '/shared', name: 'ironic-data-volume' }]);
    expect(sidecar.volumeMounts).toEqual([{ name: 'dnsmasq-leases', mountPath: '/var/lib/dnsmasq', readOnly: true }]);
    expect(sorted(pod.volumes)).toEqual([
      { name: 'dnsmasq-leases', emptyDir: {} },
      { name: 'ironic-data-volume', emptyDir: {} },
    ]);
    // The operator's images: entry reaches it: the patch names host-lookup's image as the install does.
    expect(sidecar.image).toBe('registry.example/host-lookup:1.2.3');
    const installImages = (parse(readFileSync(join(manifestsDir, 'kustomization.yaml'), 'utf8')) as {
      images: { name: string }[];
    }).images.map((i) => i.name);
    expect(installImages).toContain('ghcr.io/bpa-functions/host-lookup');
    // The program host-lookup's image carries, on the file and the ConfigMap of leases.yaml.
    expect(Object.keys(jobEntryPoints['host-lookup'] ?? {})).toContain('leases-publisher');
    expect(sidecar.command).toEqual([
      'node',
      'dist/bundle/leases-publisher.mjs',
      '--file',
      '/var/lib/dnsmasq/dnsmasq.leases',
      '--configmap',
      'baremetal-operator-system/bpa-dhcp-leases/dnsmasq.leases',
    ]);
  });
});
