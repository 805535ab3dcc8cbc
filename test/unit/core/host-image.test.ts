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

  it('is written where the host has none or has ours, never over someone else’s', () => {
    const desired = hostImageFor(ready);
    expect(planHostImage({ metadata: {}, spec: {} }, desired)).toBe('write');
    expect(planHostImage({ metadata: {}, spec: { image: null } }, desired)).toBe('write');
    expect(planHostImage({ metadata: {}, spec: { image: desired } }, desired)).toBe('unchanged');
    const other = { url: 'http://elsewhere/img', checksum: 'b'.repeat(64), checksumType: 'sha256' as const };
    expect(planHostImage({ metadata: {}, spec: { image: other } }, desired)).toBe('foreign');
    expect(
      planHostImage(
        { metadata: { annotations: { [hostImageAnnotation]: 'alpha/old' } }, spec: { image: other } },
        desired,
      ),
    ).toBe('write');
  });
});
