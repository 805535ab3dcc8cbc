import { createHash } from 'node:crypto';

/** Lower-case hex sha256 of a text's UTF-8 bytes. */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}
