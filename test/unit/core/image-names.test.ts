import {
  checksumLine,
  imageObjectKey,
  imageObjectName,
  imageTypeFromRoute,
  parseImageKey,
  routeSegmentOf,
} from '../../../shared/core/image-names.js';
import { imageNameSchema, imageSpecSchema } from '../../../shared/schemas/image.js';

const subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

describe('image names (the BPA REST agent mapping)', () => {
  it('maps the original route segments to types and back', () => {
    expect(imageTypeFromRoute('binary_images')).toBe('binary');
    expect(imageTypeFromRoute('container_images')).toBe('container');
    expect(imageTypeFromRoute('os_images')).toBe('os');
    expect(imageTypeFromRoute('toString')).toBeUndefined();
    expect(imageTypeFromRoute('images')).toBeUndefined();
    expect(routeSegmentOf('os')).toBe('os_images');
  });

  it('keeps a name that is already valid and maps any other one to a valid, distinct name', () => {
    expect(imageObjectName('beta', 'container', 'qwerty123')).toBe('beta.container.qwerty123');
    const mapped = imageObjectName('beta', 'os', 'Ubuntu_20.04.qcow2');
    expect(mapped).toMatch(/^beta\.os\.ubuntu-20-04-qcow2-[0-9a-f]{8}$/);
    expect(imageObjectName('beta', 'os', 'ubuntu_20.04.qcow2')).not.toBe(mapped);
    expect(imageObjectName('beta', 'os', 'ubuntu-20-04-qcow2')).toBe('beta.os.ubuntu-20-04-qcow2');
    const long = imageObjectName('c', 'binary', 'A'.repeat(200));
    expect(long.length).toBeLessThanOrEqual(253);
    for (const name of [
      mapped,
      long,
      imageObjectName('x', 'binary', '_'),
      imageObjectName('x', 'binary', '9-.'),
    ])
      expect(name).toMatch(subdomain);
  });

  it('keys objects by the original bucket, owner, cluster and verbatim name, and parses them back', () => {
    const key = imageObjectKey('os', 'alpha', 'beta', 'Ubuntu_20.04.qcow2');
    expect(key).toBe('operatingsystem/alpha/beta/Ubuntu_20.04.qcow2');
    expect(parseImageKey(key)).toEqual({
      type: 'os',
      owner: 'alpha',
      clusterName: 'beta',
      imageName: 'Ubuntu_20.04.qcow2',
    });
    for (const bad of [
      'operatingsystem/alpha/beta/../x',
      'os/alpha/beta/x',
      'binary/Alpha/beta/x',
      'binary/a/b/.hidden',
      'binary/a/b/c/d',
    ])
      expect(parseImageKey(bad)).toBeUndefined();
  });

  it('refuses image names that would collide with the objects kept beside an image', () => {
    for (const bad of ['x.sha256sum', 'x.info', 'x.part', '.x', '-x', 'a/b', ''])
      expect(imageNameSchema.safeParse(bad).success).toBe(false);
    expect(imageNameSchema.safeParse('ubuntu-20.04.img').success).toBe(true);
  });

  it('validates a spec the way the CRD does', () => {
    expect(
      imageSpecSchema.safeParse({
        type: 'os',
        owner: 'alpha',
        clusterName: 'beta',
        imageName: 'x',
        length: 1,
      }).success,
    ).toBe(true);
    expect(
      imageSpecSchema.safeParse({
        type: 'docker',
        owner: 'alpha',
        clusterName: 'beta',
        imageName: 'x',
        length: 1,
      }).success,
    ).toBe(false);
  });

  it('writes checksum lines as sha256sum does', () => {
    expect(checksumLine('a'.repeat(64), 'img.qcow2')).toBe(`${'a'.repeat(64)}  img.qcow2\n`);
  });
});
