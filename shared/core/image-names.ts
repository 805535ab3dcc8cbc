import { createHash } from 'node:crypto';
import type { ImageType } from '../schemas/image.js';

/**
 * How the BPA REST agent's names map to this project's (docs/images.md, "Names"):
 *
 *   route segment      type        key prefix (the original's MinIO bucket)
 *   binary_images      binary      binary/
 *   container_images   container   container/
 *   os_images          os          operatingsystem/
 *
 * - owner is the namespace the Image lives in (a DNS-1123 label);
 * - the Image's name is `<cluster>.<type>.<image_name>` when image_name is already a valid
 *   name segment (lower-case letters, digits, "-"), else `<cluster>.<type>.<mapped>-<hash8>`, where
 *   mapped lower-cases it and turns every other run of characters into "-", and hash8 is the
 *   first 8 hex digits of sha256(image_name), so two image names never share one Image;
 * - the object key is `<prefix><owner>/<cluster>/<image_name>`, image_name verbatim.
 * Dots separate the parts: neither a cluster name nor a type holds one, so a name parses one way.
 */
export const imageRouteSegments = {
  binary_images: 'binary',
  container_images: 'container',
  os_images: 'os',
} as const satisfies Record<string, ImageType>;
export type ImageRouteSegment = keyof typeof imageRouteSegments;

export const imageKeyPrefixes: Record<ImageType, string> = {
  binary: 'binary/',
  container: 'container/',
  os: 'operatingsystem/',
};

export const imageTypeFromRoute = (segment: string): ImageType | undefined =>
  Object.hasOwn(imageRouteSegments, segment) ? imageRouteSegments[segment as ImageRouteSegment] : undefined;

export const routeSegmentOf = (type: ImageType): ImageRouteSegment =>
  (Object.keys(imageRouteSegments) as ImageRouteSegment[]).find((s) => imageRouteSegments[s] === type)!;

const validSegment = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const maxObjectName = 253;

/** The Image object's name for an image of a cluster (see the module comment). */
export function imageObjectName(clusterName: string, type: ImageType, imageName: string): string {
  const prefix = `${clusterName}.${type}.`;
  const room = maxObjectName - prefix.length;
  if (validSegment.test(imageName) && imageName.length <= room) return prefix + imageName;
  const hash = createHash('sha256').update(imageName, 'utf8').digest('hex').slice(0, 8);
  const mapped = imageName
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, room - hash.length - 1)
    .replace(/-+$/, '');
  return prefix + (mapped === '' ? hash : `${mapped}-${hash}`);
}

/** The object key of an image's bytes; `<key>.sha256sum` holds its checksum line. */
export const imageObjectKey = (type: ImageType, owner: string, clusterName: string, imageName: string) =>
  `${imageKeyPrefixes[type]}${owner}/${clusterName}/${imageName}`;

/** Suffixes of the objects written beside an image: tus's upload info and tail part, the checksum file. */
export const imageSidecarSuffixes = ['.info', '.part', '.sha256sum'] as const;
export const checksumKey = (key: string) => `${key}.sha256sum`;

/** The `sha256sum` line for an image, as Ironic reads a checksum URL (`<hex>  <file name>`). */
export const checksumLine = (sha256: string, imageName: string) => `${sha256}  ${imageName}\n`;

/** The parts of an object key written by imageObjectKey, or undefined for any other key. */
export function parseImageKey(
  key: string,
): { type: ImageType; owner: string; clusterName: string; imageName: string } | undefined {
  const match =
    /^([a-z]+)\/([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([A-Za-z0-9_][A-Za-z0-9._-]*)$/.exec(
      key,
    );
  if (!match) return undefined;
  const type = (Object.keys(imageKeyPrefixes) as ImageType[]).find(
    (t) => imageKeyPrefixes[t] === `${match[1]}/`,
  );
  if (!type || match[2]!.length > 63 || match[4]!.length > 63 || match[6]!.length > 200) return undefined;
  return { type, owner: match[2]!, clusterName: match[4]!, imageName: match[6]! };
}
