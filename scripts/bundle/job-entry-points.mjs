// Entry points a function's image runs besides its server: the Jobs it creates run the
// function's own image (contract section 11), so their code is bundled with the function; so does
// host-lookup's lease publisher, the sidecar of manifests/components/leases-publisher.
//   <function>: { <bundle name, dist/bundle/<name>.mjs>: <source, relative to functions/<function>/> }
// The function's config names the bundle in its Job's command (software-install: INSTALL_JOB_COMMAND;
// kud-job-launch's publisher: `node dist/bundle/kubeconfig-publisher.mjs`).
export const jobEntryPoints = {
  'host-lookup': { 'leases-publisher': 'leases-publisher/main.ts' },
  'kud-job-launch': { 'kubeconfig-publisher': 'kubeconfig-publisher/main.ts' },
  'software-install': { 'software-install-job': 'install-job/main.ts' },
};
