// The project's images, one recipe each: their layers (shared where they can be, so a node pulls
// or imports the Debian root and Node.js once) and what they run. Every image runs as 65532
// (no root), needs no writable root filesystem, and names its entrypoint.
//
//   <function> (six)  Debian minbase + Node.js 22 + the external packages + the function's bundles:
//                     dist/bundle/<function>.mjs and the entry points of the Jobs it creates (the
//                     install Job, the kubeconfig publisher, the leases publisher: contract section
//                     11, the Jobs run the functions' own image with another command)
//   cleanup           Debian minbase: a shell and rm for the deletion cleanup Job
//   kud-stand-in      Debian minbase + ansible-core, python3, openssh-client + local/kud-stand-in
//   pause             Kubernetes' pause, static: the pod sandbox of a containerd node
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { installJobUid } from '../../functions/software-install/install-job/job-objects.js';
import { BpaError } from '../../shared/errors.js';
import type { RunConfig } from './oci.js';
import type { TarEntry } from './tar.js';
import { parentDirs, treeEntries } from './tree.js';

export interface LayerRecipe {
  /** For the log: what the layer is. */
  name: string;
  entries: () => TarEntry[];
}

export interface ImageRecipe {
  name: string;
  layers: LayerRecipe[];
  run: RunConfig;
}

/** Where each input is on this machine (local/images/inputs.ts fetches them). */
export interface Inputs {
  repo: string;
  baseRoot: string;
  kudRoot: string;
  nodeDir: string;
  pauseDir: string;
  /** node_modules/... paths of the packages the bundles leave external, with their dependencies. */
  modules: string[];
}

/** 65532, the uid the install Job's pod names (Pod Security `restricted` needs it numeric). */
export const imageUser = `${installJobUid}:${installJobUid}`;
const root = { uid: 0, gid: 0 };
const path = 'PATH=/usr/local/bin:/usr/bin:/bin';

/** The functions' bundles and external packages, as scripts/bundle.mjs recorded them. */
export interface BundleManifest {
  functions: Record<string, { bundles: string[] }>;
  external: string[];
}

export function readBundleManifest(repo: string): BundleManifest {
  const file = join(repo, 'dist', 'bundle', 'manifest.json');
  if (!existsSync(file))
    throw new BpaError('ImageInputFailed', `${file} is missing: run npm run build first`, 'internal');
  return JSON.parse(readFileSync(file, 'utf8')) as BundleManifest;
}

function file(at: string, source: string, mode: number): TarEntry[] {
  const bytes = readFileSync(source);
  return [
    ...parentDirs(at),
    { type: 'file', path: at, mode, size: bytes.length, source: { bytes }, ...root },
  ];
}

/** A Debian root from scripts/image-roots.sh: all of it (its /dev, /proc, /run were emptied there). */
function debianLayer(name: string, rootfs: string): LayerRecipe {
  return { name, entries: () => treeEntries(rootfs, { at: '' }) };
}

/** Native add-ons built for the machine's Node.js are left out: ssh2 falls back to its JavaScript crypto. */
function isNativeBuild(repo: string, relative: string): boolean {
  return /(^|\/)build$/.test(relative) && existsSync(join(repo, relative, '..', 'binding.gyp'));
}

export function imageRecipes(inputs: Inputs, bundles: BundleManifest): ImageRecipe[] {
  const base = debianLayer('debian-base', inputs.baseRoot);
  const node: LayerRecipe = {
    name: 'node',
    entries: () => [
      ...file('usr/local/bin/node', join(inputs.nodeDir, 'node'), 0o755),
      ...file('usr/local/share/doc/node/LICENSE', join(inputs.nodeDir, 'LICENSE'), 0o644),
    ],
  };
  const modules: LayerRecipe = {
    name: 'node_modules',
    entries: () =>
      inputs.modules.flatMap((module) => [
        ...parentDirs(`app/${module}/x`),
        ...treeEntries(join(inputs.repo, module), {
          at: `app/${module}`,
          owner: root,
          // A package's own nested node_modules are listed on their own.
          skip: (rel) => rel === 'node_modules' || isNativeBuild(inputs.repo, `${module}/${rel}`),
        }),
      ]),
  };
  const functions = Object.entries(bundles.functions).map(([name, { bundles: names }]): ImageRecipe => ({
    name,
    layers: [
      base,
      node,
      modules,
      {
        name: `${name} bundles`,
        entries: () =>
          names.flatMap((bundle) =>
            ['.mjs', '.mjs.map', '.mjs.LEGAL.txt']
              .map((suffix) => join(inputs.repo, 'dist', 'bundle', `${bundle}${suffix}`))
              .filter((source) => existsSync(source))
              .flatMap((source) => file(`app/dist/bundle/${source.split('/').pop() ?? ''}`, source, 0o644)),
          ),
      },
    ],
    run: {
      User: imageUser,
      Entrypoint: ['/usr/local/bin/node'],
      Cmd: [`dist/bundle/${name}.mjs`],
      Env: [path, 'NODE_ENV=production', 'HOME=/home/nonroot'],
      WorkingDir: '/app',
      Labels: { 'org.opencontainers.image.title': name },
    },
  }));
  const standIn = join(inputs.repo, 'local', 'kud-stand-in');
  return [
    ...functions,
    {
      name: 'cleanup',
      layers: [base],
      run: {
        User: imageUser,
        Entrypoint: ['/bin/sh'],
        Env: [path],
        WorkingDir: '/',
        Labels: { 'org.opencontainers.image.title': 'cleanup' },
      },
    },
    {
      name: 'kud-stand-in',
      layers: [
        debianLayer('debian-kud', inputs.kudRoot),
        {
          name: 'installer',
          entries: () => [
            ...file('opt/kud-stand-in/installer', join(standIn, 'installer'), 0o755),
            ...file('opt/kud-stand-in/ansible.cfg', join(standIn, 'ansible.cfg'), 0o644),
            // The stand-in playbook the installer runs with ansible-playbook, beside it.
            ...file('opt/kud-stand-in/cluster.yml', join(standIn, 'cluster.yml'), 0o644),
          ],
        },
      ],
      run: {
        User: imageUser,
        // The KUD Job brings `/bin/sh -c "...; ./installer --cluster <c> ..."`, run in the WORKDIR
        // as in KUD's own image; ansible.cfg there is Ansible's configuration.
        Entrypoint: ['/bin/sh'],
        Env: [path, 'HOME=/home/nonroot'],
        WorkingDir: '/opt/kud-stand-in',
        Labels: { 'org.opencontainers.image.title': 'kud-stand-in' },
      },
    },
    {
      name: 'pause',
      layers: [{ name: 'pause', entries: () => file('pause', join(inputs.pauseDir, 'pause'), 0o755) }],
      run: {
        User: imageUser,
        Entrypoint: ['/pause'],
        Env: [path],
        WorkingDir: '/',
        Labels: { 'org.opencontainers.image.title': 'pause' },
      },
    },
  ];
}
