import type { KubernetesObject } from '@kubernetes/client-node';
import { BpaError } from '../../shared/errors.js';

/** The name Knative's releases give an image (manifests/functions/dead-letter.yaml names event_display so). */
export const releasedImageName = (koPath: string) =>
  `gcr.io/knative-releases/${koPath.replace(/^ko:\/\//, '')}`;

/**
 * What `ko resolve` does to Knative's config/ YAML, with images built here (local/images/knative.ts,
 * `<out>/ko-images.json`): every string that is a `ko://<import path>` becomes that image by
 * digest, in containers and in env values alike (the controller's APISERVER_RA_IMAGE names the
 * ApiServerSource adapter's image so). A container whose image was resolved gets
 * `imagePullPolicy: Never`: the node imported it, and a pull could only leave the machine.
 * An `image` field naming a `ko://` path with no image is an error (that pod could never start);
 * an env value without one is left as it is and reported (auth_proxy: not built, not used here).
 * Any other string equal to a key of `images` (a released name: releasedImageName) is resolved too.
 */
export function resolveKoImages(
  objects: KubernetesObject[],
  images: Record<string, string>,
): { objects: KubernetesObject[]; unresolved: string[] } {
  const unresolved = new Set<string>();
  const walk = (value: unknown, where: string): unknown => {
    if (Array.isArray(value)) return value.map((item, i) => walk(item, `${where}[${i}]`));
    if (value === null || typeof value !== 'object') return value;
    const copy: Record<string, unknown> = {};
    for (const [key, field] of Object.entries(value as Record<string, unknown>)) {
      const image = typeof field === 'string' && Object.hasOwn(images, field) ? images[field] : undefined;
      if (image) copy[key] = image;
      else if (typeof field === 'string' && field.startsWith('ko://')) {
        if (key === 'image')
          throw new BpaError(
            'KnativeImageMissing',
            `${where}.image names ${field}, which the Knative images build did not make (engines/build.sh knative builds its binary; npm run images --knative its image)`,
            'internal',
          );
        else {
          unresolved.add(field);
          copy[key] = field;
        }
      } else copy[key] = walk(field, `${where}.${key}`);
    }
    if (typeof copy.image === 'string' && Object.values(images).includes(copy.image))
      copy.imagePullPolicy = 'Never';
    return copy;
  };
  return {
    objects: objects.map(
      (o) =>
        walk(
          o,
          `${o.kind ?? ''} ${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`,
        ) as KubernetesObject,
    ),
    unresolved: [...unresolved].sort(),
  };
}
