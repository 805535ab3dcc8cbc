import { z } from 'zod';
import { clusterNameSchema, provisioningApiVersion } from './provisioning.js';
import { conditionSchema, kubeObjectSchema, objectMetaSchema } from './kube.js';
import { hostResultSchema } from '../events/types.js';

export const softwareKind = 'Software';

/**
 * Package names and versions are passed to apt-get as words: nothing a shell could read twice, and
 * no word ending in `-`, which apt-get reads as "remove" (`openssh-server-` would remove sshd).
 * The CRD (manifests/crds/software.yaml) carries the same name pattern.
 */
export const packageNamePattern = /^[a-z0-9](?:[a-z0-9+.-]*[a-z0-9+.])?$/;
export const packageVersionPattern = /^[A-Za-z0-9.+~:-]*[A-Za-z0-9.+~:]$/;

const packageNameSchema = z
  .string()
  .regex(
    packageNamePattern,
    'must be a Debian package name (lower-case letters, digits, "+", "-", "."), not ending in "-" (apt\'s "remove")',
  );

/** `htop` or `{htop: {version: 2.2.0-1}}`. */
export const softwareItemSchema = z.union([
  packageNameSchema,
  z
    .record(
      z.string(),
      z.object({
        version: z
          .string()
          .regex(
            packageVersionPattern,
            'must be a package version (letters, digits, ".", "+", "~", ":", "-"), not ending in "-"',
          ),
      }),
    )
    .superRefine((entry, ctx) => {
      const names = Object.keys(entry);
      if (names.length !== 1) {
        ctx.addIssue({
          code: 'custom',
          message: 'must be a package name or a one-key map {<package>: {version}}',
        });
        return;
      }
      const [name] = names as [string];
      if (!packageNamePattern.test(name))
        ctx.addIssue({ code: 'custom', message: `package name ${JSON.stringify(name)} is not valid` });
    }),
]);
export type SoftwareItem = z.infer<typeof softwareItemSchema>;

/** One package to install: `apt-get install <name>` or `<name>=<version>`. */
export interface PackageRequest {
  name: string;
  version?: string;
}

export const softwareSchema = kubeObjectSchema(provisioningApiVersion, softwareKind, {
  metadata: objectMetaSchema.extend({
    labels: z.object({ cluster: clusterNameSchema }).catchall(z.string()),
  }),
  spec: z
    .object({
      masterSoftware: z.array(softwareItemSchema).nullish(),
      workerSoftware: z.array(softwareItemSchema).nullish(),
    })
    .loose(),
  status: z
    .object({
      conditions: z.array(conditionSchema).optional(),
      hosts: z.array(hostResultSchema).optional(),
    })
    .loose()
    .optional(),
});
export type Software = z.infer<typeof softwareSchema>;

/** The packages of a software list, as validated words. */
export function packageRequests(items: readonly SoftwareItem[] | null | undefined): PackageRequest[] {
  return (items ?? []).map((item) => {
    if (typeof item === 'string') return { name: item };
    const [name, { version }] = Object.entries(item)[0] as [string, { version: string }];
    return { name, version };
  });
}
