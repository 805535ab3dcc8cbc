import { hostImageAnnotation, hostImageFor, planHostImage } from '../../../shared/core/host-image.js';
import type { Image } from '../../../shared/schemas/image.js';

const image = (status: Image['status']): Image => ({
  apiVersion: 'bpa.akraino.org/v1alpha1',
  kind: 'Image',
  metadata: { name: 'beta.os.node', namespace: 'alpha' },
  spec: { type: 'os', owner: 'alpha', clusterName: 'beta', imageName: 'node', length: 10, format: 'qcow2' },
  status,
});
const ready = image({ phase: 'Ready', url: 'http://dl/images/alpha/beta.os.node', sha256: 'a'.repeat(64) });

describe('a host image from an Image', () => {
  it('is the Ready Image’s URL, sha256 and format', () => {
    expect(hostImageFor(ready)).toEqual({
      url: 'http://dl/images/alpha/beta.os.node',
      checksum: 'a'.repeat(64),
      checksumType: 'sha256',
      format: 'qcow2',
    });
  });

  it('is refused while the Image is not Ready', () => {
    expect(() => hostImageFor(image({ phase: 'Uploaded' }))).toThrow(
      expect.objectContaining({ reason: 'ImageNotReady' }),
    );
    expect(() => hostImageFor(image(undefined))).toThrow(/Pending, not Ready/);
  });

  const owner = { namespace: 'alpha', name: 'edge', uid: 'u-1' };
  const consumerRef = {
    apiVersion: 'bpa.akraino.org/v1alpha1',
    kind: 'Provisioning',
    namespace: 'alpha',
    name: 'edge',
    uid: 'u-1',
  };

  it('is written where the host has none or has ours, never over someone else’s', () => {
    const desired = hostImageFor(ready);
    const plan = (host: { metadata: { annotations?: Record<string, string> }; spec: object }) =>
      planHostImage({ ...host, spec: { ...host.spec, consumerRef } }, desired, owner);
    expect(plan({ metadata: {}, spec: {} })).toBe('write');
    expect(plan({ metadata: {}, spec: { image: null } })).toBe('write');
    expect(plan({ metadata: {}, spec: { image: desired } })).toBe('unchanged');
    const other = { url: 'http://elsewhere/img', checksum: 'b'.repeat(64), checksumType: 'sha256' as const };
    expect(plan({ metadata: {}, spec: { image: other } })).toBe('foreign');
    expect(
      plan({ metadata: { annotations: { [hostImageAnnotation]: 'alpha/old' } }, spec: { image: other } }),
    ).toBe('write');
  });

  it('is written only on a host this Provisioning claims by consumerRef, whatever the annotation says', () => {
    const desired = hostImageFor(ready);
    const ours = { metadata: { annotations: { [hostImageAnnotation]: 'beta/theirs' } } };
    for (const ref of [
      undefined,
      null,
      { ...consumerRef, namespace: 'beta' },
      { ...consumerRef, uid: 'u-2' },
      {
        apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta1',
        kind: 'Metal3Machine',
        namespace: 'alpha',
        name: 'edge',
      },
    ])
      expect(planHostImage({ ...ours, spec: { consumerRef: ref } }, desired, owner)).toBe('not-owned');
  });
});
