import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Files and secrets kube-apiserver is started with; all live in the control plane's temp dir. */
export interface ControlPlaneCredentials {
  /** Bearer token of the `admin` user, member of `system:masters`. */
  adminToken: string;
  /** --token-auth-file */
  tokenFile: string;
  /** --service-account-key-file and --service-account-signing-key-file (one EC P-256 key). */
  serviceAccountKeyFile: string;
}

export const adminUser = 'admin';

/** Generates an admin token and a service-account signing key and writes them under `dir`. */
export function writeCredentials(dir: string): ControlPlaneCredentials {
  const adminToken = randomBytes(24).toString('hex');
  const tokenFile = join(dir, 'tokens.csv');
  // token,user,uid,"group1,group2"
  writeFileSync(tokenFile, `${adminToken},${adminUser},${adminUser},"system:masters"\n`, {
    mode: 0o600,
  });
  const { privateKey } = generateKeyPairSync('ec', {
    namedCurve: 'P-256',
    privateKeyEncoding: { type: 'sec1', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const serviceAccountKeyFile = join(dir, 'service-account.key');
  writeFileSync(serviceAccountKeyFile, privateKey, { mode: 0o600 });
  return { adminToken, tokenFile, serviceAccountKeyFile };
}
