import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

/**
 * A small certificate authority made with the openssl CLI (node:crypto cannot issue X.509
 * certificates). kube-apiserver trusts it for client certificates (--client-ca-file) and for the
 * kubelet's serving certificate (--kubelet-certificate-authority), and presents a client
 * certificate it signed to the kubelet's log endpoint (--kubelet-client-certificate).
 */
export interface CertificateAuthority {
  certFile: string;
  keyFile: string;
}

export interface IssuedCertificate {
  certFile: string;
  keyFile: string;
}

export interface CertificateRequest {
  /** File name stem under the directory: `<name>.crt` and `<name>.key`. */
  name: string;
  commonName: string;
  organization?: string;
  /** Subject alternative names, e.g. ['IP:127.0.0.1', 'DNS:localhost']. */
  altNames?: string[];
  usage: 'client' | 'server' | 'both';
}

const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
const days = ['-days', '3650'];

function openssl(args: string[]): void {
  try {
    execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? '';
    throw new Error(`openssl ${args[0]} failed: ${stderr.trim() || String(error)}`, { cause: error });
  }
}

/** A fresh self-signed EC P-256 CA in `dir` (ca.crt, ca.key). */
export function createCertificateAuthority(dir: string, commonName = 'bpa-local-ca'): CertificateAuthority {
  const ca = { certFile: join(dir, 'ca.crt'), keyFile: join(dir, 'ca.key') };
  openssl([
    'req',
    '-x509',
    ...ecKey,
    ...days,
    '-keyout',
    ca.keyFile,
    '-out',
    ca.certFile,
    '-subj',
    `/CN=${commonName}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
  ]);
  return ca;
}

/** A leaf certificate signed by `ca`, written to `<dir>/<name>.crt|.key`. */
export function issueCertificate(
  ca: CertificateAuthority,
  dir: string,
  request: CertificateRequest,
): IssuedCertificate {
  const issued = { certFile: join(dir, `${request.name}.crt`), keyFile: join(dir, `${request.name}.key`) };
  const subject = `${request.organization ? `/O=${request.organization}` : ''}/CN=${request.commonName}`;
  const extendedUsage = { client: 'clientAuth', server: 'serverAuth', both: 'serverAuth,clientAuth' }[
    request.usage
  ];
  openssl([
    'req',
    '-x509',
    ...ecKey,
    ...days,
    '-CA',
    ca.certFile,
    '-CAkey',
    ca.keyFile,
    '-set_serial',
    `0x${randomBytes(16).toString('hex')}`,
    '-keyout',
    issued.keyFile,
    '-out',
    issued.certFile,
    '-subj',
    subject,
    '-addext',
    'basicConstraints=critical,CA:FALSE',
    '-addext',
    'keyUsage=critical,digitalSignature,keyEncipherment',
    '-addext',
    `extendedKeyUsage=${extendedUsage}`,
    ...(request.altNames?.length ? ['-addext', `subjectAltName=${request.altNames.join(',')}`] : []),
  ]);
  return issued;
}
