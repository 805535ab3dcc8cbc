import { z } from 'zod';
import { conditionSchema, dns1123LabelPattern, kubeObjectSchema, objectMetaSchema } from './kube.js';

export const imageApiVersion = 'bpa.akraino.org/v1alpha1';
export const imageKind = 'Image';
export const imageGroup = 'bpa.akraino.org';
export const imageVersion = 'v1alpha1';
export const imagePlural = 'images';

/** The three kinds of image the original stored, by their short name. */
export const imageTypes = ['binary', 'container', 'os'] as const;
export const imageTypeSchema = z.enum(imageTypes);
export type ImageType = z.infer<typeof imageTypeSchema>;

/** Metal3's BareMetalHost spec.image.format values. */
export const imageFormatSchema = z.enum(['raw', 'qcow2', 'vdi', 'vmdk', 'live-iso']);
export type ImageFormat = z.infer<typeof imageFormatSchema>;

export const imagePhases = ['Pending', 'Uploading', 'Uploaded', 'Ready', 'Failed'] as const;
export const imagePhaseSchema = z.enum(imagePhases);
export type ImagePhase = z.infer<typeof imagePhaseSchema>;

/** owner (= namespace) and cluster name: DNS-1123 labels. */
export const imageOwnerSchema = z
  .string()
  .max(63, 'must be at most 63 characters')
  .regex(dns1123LabelPattern, 'must be a DNS-1123 label (the namespace the Image lives in)');
export const imageClusterNameSchema = z
  .string()
  .max(63, 'must be at most 63 characters')
  .regex(dns1123LabelPattern, 'must be a DNS-1123 label (lower-case letters, digits and "-")');

/**
 * The original's image_name, kept verbatim: it becomes the last segment of the object key, so
 * it may not hold "/" or start with "." (no traversal, no hidden `.info`/`.part` siblings).
 */
export const imageNamePattern = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;
export const imageNameSchema = z
  .string()
  .min(1)
  .max(200, 'must be at most 200 characters')
  .regex(imageNamePattern, 'must be letters, digits, ".", "_" or "-", not starting with "." or "-"')
  .refine(
    (name) => !/\.(info|part|sha256sum)$/.test(name),
    'must not end in .info, .part or .sha256sum (names of the objects kept beside an image)',
  );

export const sha256HexSchema = z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lower-case hex digits');
export const sha512HexSchema = z.string().regex(/^[0-9a-f]{128}$/, 'must be 128 lower-case hex digits');

export const imageSpecSchema = z.object({
  type: imageTypeSchema,
  owner: imageOwnerSchema,
  clusterName: imageClusterNameSchema,
  imageName: imageNameSchema,
  length: z.number().int().nonnegative(),
  format: imageFormatSchema.optional(),
  expectedChecksum: z
    .object({ sha256: sha256HexSchema.optional(), sha512: sha512HexSchema.optional() })
    .optional(),
  /** The original's `description` ({image_records: [...]}), kept as given. */
  description: z.record(z.string(), z.unknown()).optional(),
});
export type ImageSpec = z.infer<typeof imageSpecSchema>;

export const imageStorageSchema = z.object({ bucket: z.string().min(1), key: z.string().min(1) });
export type ImageStorage = z.infer<typeof imageStorageSchema>;

export const imageStatusSchema = z
  .object({
    observedGeneration: z.number().int().optional(),
    phase: imagePhaseSchema.optional(),
    uploadOffset: z.number().int().nonnegative().optional(),
    uploadLength: z.number().int().nonnegative().optional(),
    storage: imageStorageSchema.optional(),
    sha256: sha256HexSchema.optional(),
    sha512: sha512HexSchema.optional(),
    url: z.string().optional(),
    checksumUrl: z.string().optional(),
    /** When url and checksumUrl stop working (they are signed: shared/storage/signed-url.ts). */
    urlExpiresAt: z.string().optional(),
    /** image-verify's progress: bytes read back of the total, and the deadline derived from the size. */
    verification: z
      .object({
        bytesVerified: z.number().int().nonnegative(),
        totalBytes: z.number().int().nonnegative(),
        startedAt: z.string().optional(),
        deadline: z.string().optional(),
      })
      .optional(),
    conditions: z.array(conditionSchema).optional(),
  })
  .loose();
export type ImageStatus = z.infer<typeof imageStatusSchema>;

export const imageSchema = kubeObjectSchema(imageApiVersion, imageKind, {
  metadata: objectMetaSchema,
  spec: imageSpecSchema,
  status: imageStatusSchema.optional(),
});
export type Image = z.infer<typeof imageSchema>;
