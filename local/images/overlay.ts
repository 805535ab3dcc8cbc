// The one place images are named by digest: a kustomize Component whose `images:` maps each name
// the manifests use (ghcr.io/bpa-functions/<image>) to where the built image is and its digest.
// An overlay adds it to its `components:`; kustomize rewrites every container image and, through
// manifests/image-fields.yaml, the Job images of bpa-config (KUD_IMAGE, CLEANUP_IMAGE,
// KUBECONFIG_PUBLISHER_IMAGE, INSTALL_JOB_IMAGE), so Jobs follow the functions.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';

/** The names the manifests give the project's images (manifests/kustomization.yaml). */
export const manifestImagePrefix = 'ghcr.io/bpa-functions';

export interface ImageDigest {
  name: string;
  digest: string;
  /** The names manifests give it; absent: ghcr.io/bpa-functions/<name>. */
  names?: string[];
}

export function imagesComponent(images: ImageDigest[], repository: string, header: string): string {
  const body = {
    apiVersion: 'kustomize.config.k8s.io/v1alpha1',
    kind: 'Component',
    images: [...images]
      .sort((a, b) => a.name.localeCompare(b.name))
      .flatMap((image) =>
        (image.names ?? [`${manifestImagePrefix}/${image.name}`]).map((name) => ({
          name,
          newName: `${repository}/${image.name}`,
          digest: image.digest,
        })),
      ),
  };
  return `${header
    .split('\n')
    .map((line) => `# ${line}`.trimEnd())
    .join('\n')}\n${stringify(body)}`;
}

export function writeImagesComponent(
  dir: string,
  images: ImageDigest[],
  repository: string,
  header: string,
): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'kustomization.yaml');
  writeFileSync(file, imagesComponent(images, repository, header));
  return file;
}
