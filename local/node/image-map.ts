import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';
import { invalid } from '../../shared/errors.js';
import { repoRoot } from '../control-plane/repo-root.js';
import { knativeBinaryDir } from '../knative/binaries.js';

/** One image's stand-in: what the node runs instead of pulling and unpacking it. */
export const imageEntrySchema = z.strictObject({
  command: z.array(z.string()).min(1),
  args: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).default({}),
  /** Absolute, or under the repository (`${REPO_ROOT}/...`, substituted once the file is valid). */
  workingDir: z
    .string()
    .regex(/^(\/|\$\{REPO_ROOT\}\/)/, 'an absolute path (or ${REPO_ROOT}/...)')
    .optional(),
});
export type ImageEntry = z.infer<typeof imageEntrySchema>;

export const imageMapFileSchema = z.strictObject({
  images: z.record(z.string().min(1), imageEntrySchema),
});

/** Image reference -> local command, merged from one or more map files (later files win). */
export type ImageMap = ReadonlyMap<string, ImageEntry>;

/** The node's own map file, in the repository. */
export const defaultImageMapFile = () => join(repoRoot(), 'local', 'node', 'images.yaml');

const placeholders = () => ({
  REPO_ROOT: repoRoot(),
  NODE: process.execPath,
  // The directories engines/build.sh builds Knative into (or their overrides).
  KNATIVE_EVENTING: knativeBinaryDir('knative'),
  KNATIVE_SERVING: knativeBinaryDir('knative-serving'),
});

function substitute(text: string): string {
  const values: Record<string, string> = placeholders();
  return text.replace(
    /\$\{(REPO_ROOT|NODE|KNATIVE_EVENTING|KNATIVE_SERVING)\}/g,
    (_, name: string) => values[name] ?? '',
  );
}

/** Reads and validates map files; a bad file is a clear error naming the file and the field. */
export function loadImageMap(files: string[] = [defaultImageMapFile()]): ImageMap {
  const map = new Map<string, ImageEntry>();
  for (const file of files) {
    const parsed = imageMapFileSchema.safeParse(parse(readFileSync(file, 'utf8')));
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw invalid(
        'InvalidImageMap',
        `${file}: ${issue?.path.join('.') || '(root)'}: ${issue?.message ?? parsed.error.message}`,
      );
    }
    for (const [image, entry] of Object.entries(parsed.data.images)) {
      map.set(image, {
        command: entry.command.map(substitute),
        args: entry.args.map(substitute),
        env: Object.fromEntries(Object.entries(entry.env).map(([key, value]) => [key, substitute(value)])),
        ...(entry.workingDir ? { workingDir: substitute(entry.workingDir) } : {}),
      });
    }
  }
  return map;
}

/** The map's entry for `image`, trying `docker.io/library/` spellings of short names too. */
export function lookupImage(map: ImageMap, image: string): ImageEntry | undefined {
  const direct = map.get(image);
  if (direct) return direct;
  const withTag = image.includes(':') || image.includes('@') ? image : `${image}:latest`;
  const candidates = [withTag];
  // Docker's rule: the first path component names a registry only when a `/` follows it and it
  // has a `.` or `:` or is localhost.
  const [first = '', ...rest] = withTag.split('/');
  const hasRegistry =
    rest.length > 0 && (first.includes('.') || first.includes(':') || first === 'localhost');
  if (!hasRegistry)
    candidates.push(rest.length > 0 ? `docker.io/${withTag}` : `docker.io/library/${withTag}`);
  return candidates.map((candidate) => map.get(candidate)).find(Boolean);
}

/** The waiting message of a container whose image has no stand-in. */
export const unmappedImageMessage = (image: string) =>
  `Container image "${image}" is not in the node's image map (there is no container runtime on this node; ` +
  `add the image to local/node/images.yaml or to a map passed to startNode)`;
