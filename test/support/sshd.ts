/** Real OpenSSH hosts for tests: the lab's own (local/lab/openssh-hosts.ts), one implementation. */
export * from '../../local/lab/openssh-hosts.js';
