import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';
import { BpaError } from '../../shared/errors.js';
import { minimalBareMetalHostCrd } from './baremetalhost-crd.js';
import type { CrdInput } from './crds.js';
import { repoRoot } from './repo-root.js';

/** The CRDs a control plane for this project gets, and where each came from. */
export interface CrdSelection {
  inputs: CrdInput[];
  /** One human line per source, for start-up output. */
  notes: string[];
}

const crdKustomizationSchema = z.looseObject({ resources: z.array(z.string()).min(1) });

const metal3File = 'metal3.io_baremetalhosts.yaml';

const missingCrds = (message: string) => new BpaError('CrdFilesMissing', message, 'invalid');

/**
 * The project's own CRDs (those manifests/crds/kustomization.yaml lists), the BareMetalHost CRD from `$METAL3_CRDS_DIR` (else
 * the project's minimal one), and every Knative CRD in `$KNATIVE_CRDS_DIR` (else none). When a
 * variable is set, or when CI=true, a missing file is an error rather than a silent fallback.
 */
export function projectCrds(env: NodeJS.ProcessEnv = process.env, root = repoRoot()): CrdSelection {
  const strict = env.CI === 'true';
  const inputs: CrdInput[] = [];
  const notes: string[] = [];

  // The files manifests/crds/kustomization.yaml lists: what `kubectl apply -k manifests/crds` installs.
  const crdsDir = join(root, 'manifests', 'crds');
  const kustomization = join(crdsDir, 'kustomization.yaml');
  if (!existsSync(kustomization)) throw missingCrds(`the project's ${kustomization} is missing`);
  const listed = crdKustomizationSchema.safeParse(parse(readFileSync(kustomization, 'utf8')));
  if (!listed.success) throw missingCrds(`${kustomization} lists no resources: ${listed.error.message}`);
  for (const file of listed.data.resources) {
    const path = join(crdsDir, file);
    if (!existsSync(path)) throw missingCrds(`the project's CRD ${path} is missing`);
    inputs.push(path);
  }
  notes.push('bpa.akraino.org Provisioning, Software and Image from manifests/crds/');

  const metal3Dir = env.METAL3_CRDS_DIR;
  if (metal3Dir) {
    const path = join(metal3Dir, metal3File);
    if (!existsSync(path)) throw missingCrds(`METAL3_CRDS_DIR=${metal3Dir} has no ${metal3File}`);
    inputs.push(path);
    notes.push(`metal3.io BareMetalHost from ${path}`);
  } else if (strict) {
    throw missingCrds('CI=true but METAL3_CRDS_DIR is not set: the real BareMetalHost CRD is required');
  } else {
    inputs.push(minimalBareMetalHostCrd);
    notes.push("metal3.io BareMetalHost: the project's minimal CRD (set METAL3_CRDS_DIR for Metal3's own)");
  }

  const knativeDir = env.KNATIVE_CRDS_DIR;
  if (knativeDir) {
    const files = existsSync(knativeDir)
      ? readdirSync(knativeDir).filter((name) => name.endsWith('.yaml') || name.endsWith('.yml'))
      : [];
    if (files.length === 0) throw missingCrds(`KNATIVE_CRDS_DIR=${knativeDir} holds no .yaml file`);
    inputs.push(...files.sort().map((name) => join(knativeDir, name)));
    notes.push(`Knative: ${files.length} CRDs from ${knativeDir}`);
  } else if (strict) {
    throw missingCrds('CI=true but KNATIVE_CRDS_DIR is not set: the Knative CRDs are required');
  } else {
    notes.push('Knative: none (set KNATIVE_CRDS_DIR to install them)');
  }
  return { inputs, notes };
}
