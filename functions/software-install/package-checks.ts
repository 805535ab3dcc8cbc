import type { Software } from '../../shared/schemas/software.js';
import type { StoredObject } from '../../shared/k8s/stored-object.js';
import { buildInstallCommand, packageSpecsFromItems, packageWord } from './ssh/command.js';
import { packagesForRoles } from './ssh/install.js';

/** A Software's two package lists, absent ones empty (what packagesForRoles takes). */
export const softwareLists = (software: Software) => ({
  masterSoftware: software.spec.masterSoftware ?? [],
  workerSoftware: software.spec.workerSoftware ?? [],
});

/** The package words of a not yet parsed Software (lists of any shape: only the words are judged here). */
export function validateRawPackages(live: StoredObject, username: string) {
  const spec = (live as { spec?: Record<string, unknown> }).spec ?? {};
  for (const key of ['masterSoftware', 'workerSoftware']) {
    const items = Array.isArray(spec[key]) ? (spec[key] as unknown[]) : [];
    const packages = items.flatMap((item) => {
      try {
        return packageSpecsFromItems([item]);
      } catch {
        return []; // not a word or a {name: {version}} map: the schema says why
      }
    });
    for (const pkg of packages) packageWord(pkg);
    if (packages.length > 0) buildInstallCommand({ packages, username });
  }
}

/** Every package word must be valid before anything is launched (names, versions, length). */
export function validatePackages(software: Software, username: string) {
  for (const roles of [['master'], ['worker']] as const) {
    const packages = packagesForRoles(roles, softwareLists(software));
    for (const spec of packages) packageWord(spec);
    if (packages.length > 0) buildInstallCommand({ packages, username });
  }
}
