import ssh2 from 'ssh2';

/**
 * An ed25519 key pair in OpenSSH format, from ssh2's generator. ssh2 1.17 drops a leading zero
 * byte of the public key (about 1 key in 256 comes out 31 bytes long), and its own parseKey then
 * refuses it as "Malformed OpenSSH public key": such a pair is discarded and another generated.
 */
export function generateEd25519KeyPair(comment?: string): { private: string; public: string } {
  for (let attempt = 0; attempt < 16; attempt++) {
    const pair = ssh2.utils.generateKeyPairSync('ed25519', comment ? { comment } : {});
    if (!(ssh2.utils.parseKey(pair.public) instanceof Error)) return pair;
  }
  throw new Error('ssh2 generated no parseable ed25519 key pair in 16 attempts');
}
