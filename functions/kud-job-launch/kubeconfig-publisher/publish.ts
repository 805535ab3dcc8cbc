import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import { z } from 'zod';
import { kubeconfigLogPrefix } from '../../../shared/core/lifecycle-names.js';
import { BpaError } from '../../../shared/errors.js';

/** What the publisher is told (its command line). */
export const publishInputSchema = z.object({ file: z.string().min(1) });
export type PublishInput = z.infer<typeof publishInputSchema>;

/** A kubeconfig as far as the publisher and its reader check it: a Config with at least one cluster. */
const kubeconfigShape = z.object({
  kind: z.literal('Config'),
  clusters: z.array(z.object({ name: z.string() })).min(1),
});

/** Checks text is a kubeconfig; never returns or logs a part of it in an error. */
export function checkKubeconfig(text: string, what: string): string {
  let parsed: unknown;
  try {
    parsed = parse(text);
  } catch {
    parsed = undefined;
  }
  if (!kubeconfigShape.safeParse(parsed).success)
    throw new BpaError('AdminConfInvalid', `${what} is not a kubeconfig (kind Config with a cluster)`);
  return text;
}

/** Reads admin.conf and checks it is a kubeconfig. */
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
  return checkKubeconfig(text, file);
}

/**
 * The publisher's one line on stdout (docs/adr/0009-kubeconfig-publisher.md): the prefix, then
 * admin.conf in base64, so that no line of the file can be taken for anything else.
 */
export const framedKubeconfig = (adminConf: string) =>
  `${kubeconfigLogPrefix}${Buffer.from(adminConf, 'utf8').toString('base64')}`;

/**
 * admin.conf from the publisher pod's log (read by kud-job-launch in the functions' namespace):
 * the one framed line, decoded and checked; an error names what is wrong, never the content.
 */
export function kubeconfigFromLog(log: string): string {
  const lines = log.split('\n').filter((line) => line.startsWith(kubeconfigLogPrefix));
  if (lines.length !== 1)
    throw new BpaError(
      'KubeconfigNotInLog',
      `the publisher's log holds ${lines.length} kubeconfig lines (expected exactly 1)`,
    );
  const encoded = (lines[0] ?? '').slice(kubeconfigLogPrefix.length).trim();
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(encoded))
    throw new BpaError('KubeconfigNotInLog', "the publisher's kubeconfig line is not base64");
  return checkKubeconfig(Buffer.from(encoded, 'base64').toString('utf8'), "the publisher's admin.conf");
}
