// Entry points a function's image runs besides its server: the Jobs it creates run the
// function's own image (contract section 11), so their code is bundled with the function.
//   <function>: { <bundle name, dist/bundle/<name>.mjs>: <source, relative to functions/<function>/> }
// The function's config names the bundle in its Job's command (software-install: INSTALL_JOB_COMMAND;
// kud-job-launch's publisher: `node dist/bundle/kubeconfig-publisher.mjs`).
export const jobEntryPoints = {
  'kud-job-launch': { 'kubeconfig-publisher': 'kubeconfig-publisher/main.ts' },
  'software-install': { 'software-install-job': 'install-job/main.ts' },
};
