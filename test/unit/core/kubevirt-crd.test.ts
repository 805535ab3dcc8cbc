import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { fixturesRoot } from './golden.js';

/**
 * The committed KubeVirt CRD (test/fixtures/kubevirt) is the one engines/kubevirt-crd generates
 * from the pinned module, and has what the kubevirt-vm path and its tests rely on: the fields
 * read from status.interfaces[], and no status subresource (the tests store status with the VMI).
 */
const text = readFileSync(join(fixturesRoot, 'kubevirt', 'virtualmachineinstances.kubevirt.io.yaml'), 'utf8');
const goMod = readFileSync(join('engines', 'kubevirt-crd', 'go.mod'), 'utf8');

interface Schema {
  type?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
}
interface CrdVersion {
  name: string;
  served: boolean;
  storage: boolean;
  subresources?: object;
  schema: { openAPIV3Schema: Schema };
}
const crd = parse(text) as { metadata: { name: string }; spec: { group: string; versions: CrdVersion[] } };

describe('KubeVirt’s VirtualMachineInstance CRD (test data)', () => {
  it('names its origin: the kubevirt.io/kubevirt version engines/kubevirt-crd pins', () => {
    const version = /^\s*kubevirt\.io\/kubevirt (v\S+)$/m.exec(goMod)?.[1];
    expect(version).toMatch(/^v1\.\d+\.\d+$/);
    expect(text.split('\n')[1]).toBe(
      `# Origin: Go module kubevirt.io/kubevirt ${version} (with kubevirt.io/api ${version}), from the`,
    );
  });

  it('serves kubevirt.io/v1 (stored) with status.interfaces[].mac and .ipAddress, and no status subresource', () => {
    expect(crd.metadata.name).toBe('virtualmachineinstances.kubevirt.io');
    const v1 = crd.spec.versions.find((v) => v.name === 'v1');
    expect(v1).toMatchObject({ served: true, storage: true });
    expect(v1?.subresources).toBeUndefined();
    const status = v1?.schema.openAPIV3Schema.properties?.status;
    expect(status?.properties?.phase?.type).toBe('string');
    const entry = status?.properties?.interfaces?.items?.properties ?? {};
    expect(entry.mac?.type).toBe('string');
    expect(entry.ipAddress?.type).toBe('string');
  });
});
