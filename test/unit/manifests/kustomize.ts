import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { z } from 'zod';

/** Repository paths the manifest tests read. */
export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
export const manifestsDir = join(repoRoot, 'manifests');
export const goldenDir = join(repoRoot, 'test', 'golden', 'manifests');

export const functionNames = ['host-lookup', 'inventory-render', 'kud-job-launch', 'software-install'] as const;
export type FunctionName = (typeof functionNames)[number];

const stringMap = z.record(z.string(), z.string());

/** Any rendered object: the fields every check relies on, the rest passed through. */
export const kubeObjectSchema = z.looseObject({
  apiVersion: z.string().min(1),
  kind: z.string().min(1),
  metadata: z.looseObject({
    name: z.string().min(1),
    namespace: z.string().optional(),
    labels: stringMap.optional(),
    annotations: stringMap.optional(),
  }),
});
export type KubeObject = z.infer<typeof kubeObjectSchema>;

/** `kubectl kustomize <dir>`: the exact text `kubectl apply -k` would send. */
export function kustomize(dir: string): string {
  return execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
}

/**
 * Renders manifests/ with extra components through a throw-away overlay, the way a user's
 * production overlay would (an overlay cannot live inside manifests/: kustomize rejects
 * a resource directory that contains the overlay).
 */
export function kustomizeWithComponents(components: string[]): string {
  const overlay = mkdtempSync(join(tmpdir(), 'bpa-overlay-'));
  try {
    const rel = relative(overlay, manifestsDir);
    writeFileSync(
      join(overlay, 'kustomization.yaml'),
      [
        'apiVersion: kustomize.config.k8s.io/v1beta1',
        'kind: Kustomization',
        `resources: [${rel}]`,
        `components: [${components.map((c) => `${rel}/components/${c}`).join(', ')}]`,
        '',
      ].join('\n'),
    );
    return kustomize(overlay);
  } finally {
    rmSync(overlay, { recursive: true, force: true });
  }
}

/**
 * Renders a copy of manifests/ after `kustomize edit set image <name>=<reference>` in it (what an
 * operator does to point the install at their registry).
 */
export function kustomizeWithImage(name: string, reference: string): string {
  const copy = mkdtempSync(join(tmpdir(), 'bpa-manifests-'));
  try {
    cpSync(manifestsDir, copy, { recursive: true });
    const file = join(copy, 'kustomization.yaml');
    const kustomization = parse(readFileSync(file, 'utf8')) as { images: Record<string, string>[] };
    const entry = kustomization.images.find((image) => image.name === name);
    if (!entry) throw new Error(`manifests/kustomization.yaml has no images entry ${name}`);
    const at = reference.lastIndexOf(':');
    Object.assign(entry, { newName: reference.slice(0, at), newTag: reference.slice(at + 1) });
    writeFileSync(file, stringify(kustomization));
    return kustomize(copy);
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}

/** Parses a multi-document YAML stream into objects; any YAML error fails loudly. */
export function parseObjects(text: string): KubeObject[] {
  return parseAllDocuments(text).map((document, index) => {
    if (document.errors.length > 0) throw new Error(`document ${index}: ${document.errors[0]?.message}`);
    return kubeObjectSchema.parse(document.toJS());
  });
}

/** The objects of one kind (and API group, given as the apiVersion prefix `group/`). */
export function ofKind(objects: KubeObject[], kind: string, group?: string): KubeObject[] {
  return objects.filter(
    (o) => o.kind === kind && (group === undefined || o.apiVersion.startsWith(`${group}/`)),
  );
}

/**
 * The files of an overlay docs/deploy.md shows (between `<!-- overlay:<name>:start -->` and
 * `:end -->`): each ```yaml block whose first line is `# <dir>/<file>`, by file name.
 */
export function docOverlay(name: string): Map<string, string> {
  const doc = readFileSync(join(repoRoot, 'docs', 'deploy.md'), 'utf8');
  const section = new RegExp(`<!-- overlay:${name}:start -->([\\s\\S]*?)<!-- overlay:${name}:end -->`).exec(doc)?.[1];
  if (!section) throw new Error(`docs/deploy.md has no overlay ${name}`);
  const files = new Map<string, string>();
  for (const [, file = '', body = ''] of section.matchAll(/```yaml\n# [^/\n]+\/(\S+)\n([\s\S]*?)```/g)) files.set(file, body);
  return files;
}

/**
 * The shell commands docs/deploy.md shows between `<!-- <name>:start -->` and `<!-- <name>:end -->`
 * (one ```sh block), as written: what a test runs to follow the documented steps.
 */
export function docShellBlock(name: string): string {
  const doc = readFileSync(join(repoRoot, 'docs', 'deploy.md'), 'utf8');
  const section = new RegExp(`<!-- ${name}:start -->\\n\`\`\`sh\\n([\\s\\S]*?)\`\`\`\\n<!-- ${name}:end -->`).exec(doc)?.[1];
  if (!section) throw new Error(`docs/deploy.md has no sh block ${name}`);
  return section;
}

export interface OverlayOptions {
  /** The install namespace (docs' "Another namespace" overlay); absent: the shipped bpa-system. */
  namespace?: string;
  namePrefix?: string;
  components?: string[];
  /** The docs' "Hosts and VM namespaces" overlay on top, with these values; absent: not used. */
  hosts?: { bmhNamespace: string; vmNamespaces: readonly string[] };
}

/**
 * manifests/ rendered through the overlays docs/deploy.md shows, as written there but for the
 * path of manifests/, the namespaces, and (for test isolation) a name prefix: what an operator's
 * overlays produce.
 */
export function kustomizeDocOverlays(options: OverlayOptions): string {
  const root = mkdtempSync(join(tmpdir(), 'bpa-overlays-'));
  try {
    let base = manifestsDir;
    if (options.namespace !== undefined || options.namePrefix || options.components) {
      const dir = join(root, 'my-overlay');
      mkdirSync(dir);
      const kustomization = parse(docOverlay('namespace').get('kustomization.yaml') ?? '') as Record<string, unknown>;
      const rel = relative(dir, manifestsDir);
      kustomization.resources = [rel];
      if (options.namespace !== undefined) kustomization.namespace = options.namespace;
      else delete kustomization.namespace;
      if (options.namePrefix) kustomization.namePrefix = options.namePrefix;
      if (options.components) kustomization.components = options.components.map((c) => `${rel}/components/${c}`);
      writeFileSync(join(dir, 'kustomization.yaml'), stringify(kustomization));
      base = dir;
    }
    if (!options.hosts) return kustomize(base);
    const { bmhNamespace, vmNamespaces } = options.hosts;
    const installNamespace = options.namespace ?? 'bpa-system';
    const dir = join(root, 'hosts-overlay');
    mkdirSync(dir);
    const files = docOverlay('hosts');
    const kustomization = parse(files.get('kustomization.yaml') ?? '') as {
      resources: string[];
      patches: { patch: string }[];
    };
    const vmFile = kustomization.resources[1] ?? '';
    const vmObjects = parseAllDocuments(files.get(vmFile) ?? '').map(
      (d) => d.toJS() as { metadata: Record<string, unknown>; subjects?: Record<string, string>[] },
    );
    kustomization.resources = [relative(dir, base), ...vmNamespaces.map((ns) => `vm-${ns}.yaml`)];
    const [configPatch] = kustomization.patches;
    if (!configPatch) throw new Error('the hosts overlay of docs/deploy.md has no bpa-config patch');
    const values: Record<string, string> = {
      '/data/BMH_NAMESPACE': bmhNamespace,
      '/data/VM_NAMESPACES': vmNamespaces.join(','),
    };
    const ops = (parse(configPatch.patch) as { op: string; path: string; value: string }[]).map((op) => ({
      ...op,
      value: values[op.path] ?? op.value,
    }));
    configPatch.patch = stringify(ops);
    writeFileSync(join(dir, 'kustomization.yaml'), stringify(kustomization));
    for (const ns of vmNamespaces) {
      const objects = vmObjects.map((o) => ({
        ...o,
        metadata: { ...o.metadata, namespace: ns },
        ...(o.subjects
          ? {
              subjects: o.subjects.map((s) => ({
                ...s,
                name: `${options.namePrefix ?? ''}${s.name}`,
                namespace: installNamespace,
              })),
            }
          : {}),
      }));
      writeFileSync(join(dir, `vm-${ns}.yaml`), objects.map((o) => stringify(o)).join('---\n'));
    }
    return kustomize(dir);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
