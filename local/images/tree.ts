// The entries of an image layer: a directory tree on disk (a Debian root, the app folder) or
// files placed by name, sorted by path so the layer is the same whatever order readdir gives.
import { lstatSync, readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { TarEntry } from './tar.js';

export interface TreeOptions {
  /** Where the tree lands in the image, without a leading slash ('' = the image's root). */
  at: string;
  /** Owner of every entry (numbers); absent: each file's own on disk. */
  owner?: { uid: number; gid: number };
  /** Paths (relative to the tree) left out with everything under them. */
  skip?: (relative: string) => boolean;
}

/**
 * Every directory, file, symlink and hard link under `root`, sorted by path. Device nodes,
 * FIFOs and sockets are left out: the runtime makes /dev, and nothing else of ours needs one.
 */
export function treeEntries(root: string, options: TreeOptions): TarEntry[] {
  const entries: TarEntry[] = [];
  const inodes = new Map<TarEntry, string>();
  const walk = (relative: string): void => {
    const names = readdirSync(relative === '' ? root : join(root, relative)).sort();
    for (const name of names) {
      const rel = relative === '' ? name : `${relative}/${name}`;
      if (options.skip?.(rel)) continue;
      const path = join(root, rel);
      const stat = lstatSync(path);
      const inImage = options.at === '' ? rel : `${options.at}/${rel}`;
      const owner = options.owner ?? { uid: stat.uid, gid: stat.gid };
      if (stat.isDirectory()) {
        entries.push({ type: 'dir', path: inImage, mode: stat.mode, ...owner });
        walk(rel);
      } else if (stat.isSymbolicLink()) {
        entries.push({ type: 'symlink', path: inImage, target: readlinkSync(path), ...owner });
      } else if (stat.isFile()) {
        const entry: TarEntry = {
          type: 'file',
          path: inImage,
          mode: stat.mode,
          size: stat.size,
          source: { file: path },
          ...owner,
        };
        if (stat.nlink > 1) inodes.set(entry, `${stat.dev}:${stat.ino}`);
        entries.push(entry);
      }
    }
  };
  walk('');
  // Sorted first, so a hard link always follows the file it names (the first path of its inode).
  const first = new Map<string, string>();
  return sortEntries(entries).map((entry) => {
    const key = inodes.get(entry);
    if (key === undefined) return entry;
    const target = first.get(key);
    if (target === undefined) {
      first.set(key, entry.path);
      return entry;
    }
    return { type: 'hardlink', path: entry.path, target, uid: entry.uid, gid: entry.gid };
  });
}

/** The directories leading to `path` ('a/b/c' -> 'a', 'a/b'), root-owned, mode 0755. */
export function parentDirs(path: string): TarEntry[] {
  const parts = path.split('/').slice(0, -1);
  return parts.map((_, i) => ({
    type: 'dir',
    path: parts.slice(0, i + 1).join('/'),
    mode: 0o755,
    uid: 0,
    gid: 0,
  }));
}

/** Sorts entries by path and drops repeated directories (the first one wins). */
export function sortEntries(entries: TarEntry[]): TarEntry[] {
  const byPath = new Map<string, TarEntry>();
  for (const entry of entries) if (!byPath.has(entry.path)) byPath.set(entry.path, entry);
  return [...byPath.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}
