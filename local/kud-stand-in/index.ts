import { join } from 'node:path';
import { repoRoot } from '../control-plane/repo-root.js';

/**
 * The KUD installer STAND-IN: the folder the node gives the KUD image's container as its working
 * directory, so that the Job's `./installer --cluster <c> ...` runs `installer` here. It checks
 * the inventory with real Ansible, pings every host over SSH with the mounted key and writes a
 * marked stand-in admin.conf; it installs nothing (see the script's header).
 */
export function kudStandInDir(root = repoRoot()): string {
  return join(root, 'local', 'kud-stand-in');
}

export const kudStandInInstaller = (root = repoRoot()) => join(kudStandInDir(root), 'installer');

/** The first line of every admin.conf the stand-in writes: readers can tell it from KUD's. */
export const standInAdminConfMarker = '# STAND-IN admin.conf';
