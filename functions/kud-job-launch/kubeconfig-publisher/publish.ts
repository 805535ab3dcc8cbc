import { readFile } from 'node:fs/promises';
import type { CoreV1Api } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { z } from 'zod';
import { kubeconfigSecretKey } from '../../../shared/core/lifecycle-names.js';
import { managedByLabel, managedByValue } from '../../../shared/core/names.js';
import { BpaError } from '../../../shared/errors.js';
import { classifyApiError, isNotFound } from '../../../shared/k8s/api-errors.js';

/** What the publisher is told (its command line and its pod's namespace). */
export const publishInputSchema = z.object({
  file: z.string().min(1),
  secret: z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/),
  namespace: z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/),
});
export type PublishInput = z.infer<typeof publishInputSchema>;

/** A kubeconfig as far as the publisher checks it: a Config with at least one cluster. */
const kubeconfigShape = z.object({
  kind: z.literal('Config'),
  clusters: z.array(z.object({ name: z.string() })).min(1),
});

/** Reads admin.conf and checks it is a kubeconfig; never returns or logs a part of it in an error. */
export async function readAdminConf(file: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new BpaError(
      'AdminConfMissing',
      code === 'ENOENT'
        ? `no admin.conf at ${file}: KUD did not write the new cluster's kubeconfig on this node`
        : `cannot read ${file} (${code ?? 'error'})`,
    );
  }
  let parsed: unknown;
  try {
    parsed = parse(text);
  } catch {
    parsed = undefined;
  }
  if (!kubeconfigShape.safeParse(parsed).success)
    throw new BpaError('AdminConfInvalid', `${file} is not a kubeconfig (kind Config with a cluster)`);
  return text;
}

/**
 * Copies admin.conf into the Secret kud-job-launch created for it (key `value`). Only a Secret
 * labelled as bpa-functions' is written: the publisher's Role names the Secret, and this check
 * keeps a Secret of that name someone else made (which kud-job-launch reports) untouched.
 */
export async function publishKubeconfig(core: CoreV1Api, input: PublishInput): Promise<{ bytes: number }> {
  const adminConf = await readAdminConf(input.file);
  const { secret: name, namespace } = input;
  const secret = await core.readNamespacedSecret({ name, namespace }).catch((error: unknown) => {
    if (isNotFound(error))
      throw new BpaError(
        'KubeconfigSecretMissing',
        `Secret ${namespace}/${name} does not exist (kud-job-launch creates it)`,
      );
    throw classifyApiError(error, `read Secret ${namespace}/${name}`);
  });
  if (secret.metadata?.labels?.[managedByLabel] !== managedByValue)
    throw new BpaError(
      'ObjectConflict',
      `Secret ${namespace}/${name} was not created by bpa-functions; left untouched`,
    );
  const value = Buffer.from(adminConf, 'utf8').toString('base64');
  // The resourceVersion read above: a concurrent writer makes this a 409, not a lost update.
  await core
    .replaceNamespacedSecret({
      name,
      namespace,
      body: { ...secret, data: { ...secret.data, [kubeconfigSecretKey]: value } },
    })
    .catch((error: unknown) => {
      throw classifyApiError(error, `update Secret ${namespace}/${name}`);
    });
  return { bytes: Buffer.byteLength(adminConf) };
}
