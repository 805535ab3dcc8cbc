import { readFileSync } from 'node:fs';
import { z } from 'zod';

/**
 * The functions' own namespace: where the cluster-name claims and the installer settings
 * (`kud-installer`) live, which tenants cannot write. `FUNCTIONS_NAMESPACE` when set; else the
 * namespace of the pod's ServiceAccount (what client-go's in-cluster config reads); else
 * `bpa-system`, the install namespace of manifests/.
 */
export const defaultFunctionsNamespace = 'bpa-system';
const serviceAccountNamespaceFile = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

function serviceAccountNamespace(): string | undefined {
  try {
    const text = readFileSync(serviceAccountNamespaceFile, 'utf8').trim();
    return text === '' ? undefined : text;
  } catch {
    return undefined;
  }
}

const dns1123Label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export const functionsNamespaceEnv = z.preprocess(
  (value) => (typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined),
  z
    .string()
    .max(63)
    .regex(dns1123Label, 'must be a namespace name (DNS-1123 label)')
    .optional()
    .transform((value) => value ?? serviceAccountNamespace() ?? defaultFunctionsNamespace),
);
