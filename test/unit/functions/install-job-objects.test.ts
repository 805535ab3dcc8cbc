import {
  installJob,
  installJobName,
  installerRole,
  installerRoleBinding,
  installerServiceAccountName,
} from '../../../functions/software-install/install-job/job-objects.js';
import { nodesNotInstalled } from '../../../functions/software-install/install-job/run.js';
import { softwareInstallConfigSchema } from '../../../functions/software-install/config.js';
import { jobEntryPoints } from '../../../scripts/bundle/job-entry-points.mjs';

const software = { namespace: 'edge', name: 'sw', uid: 'u-1', generation: 4 };

test('Job names: one per generation and run, at most 63 characters, distinct when cut', () => {
  expect(installJobName('sw', 4)).toBe('sw-install-4');
  expect(installJobName('sw', 4, 'r1a2b3c4')).toBe('sw-install-4-r1a2b3c4');
  const long = 'a'.repeat(60);
  expect(installJobName(long, 1).length).toBeLessThanOrEqual(63);
  expect(installJobName(long, 1)).not.toBe(installJobName(long, 2));
  expect(installJobName(long, 1)).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
});

test('the Role writes the status of that one Software only, and reads no Secret but the SSH key', () => {
  const rules = installerRole(software, 'ssh-key-secret').rules ?? [];
  const writes = rules.filter((r) =>
    r.verbs.some((v) => ['update', 'patch', 'create', 'delete'].includes(v)),
  );
  const bpaWrites = writes.filter((r) => r.apiGroups?.includes('bpa.akraino.org'));
  expect(bpaWrites).toEqual([
    {
      apiGroups: ['bpa.akraino.org'],
      resources: ['softwares/status'],
      verbs: ['patch'],
      resourceNames: ['sw'],
    },
  ]);
  expect(rules.filter((r) => r.resources?.includes('secrets'))).toEqual([
    { apiGroups: [''], resources: ['secrets'], verbs: ['get'], resourceNames: ['ssh-key-secret'] },
  ]);
  expect(installerRoleBinding(software).subjects).toEqual([
    { kind: 'ServiceAccount', name: installerServiceAccountName('sw'), namespace: 'edge' },
  ]);
});

test('the default command runs the bundle scripts/bundle.mjs builds from install-job/main.ts into the image', () => {
  const { INSTALL_JOB_COMMAND, INSTALL_JOB_IMAGE } = softwareInstallConfigSchema.parse({});
  expect(INSTALL_JOB_COMMAND).toEqual(['node', 'dist/bundle/software-install-job.mjs']);
  // The image (local/images/recipes.ts) has dist/bundle in /app (its WORKDIR), beside the server's bundle.
  expect(jobEntryPoints['software-install']).toEqual({ 'software-install-job': 'install-job/main.ts' });
  expect(INSTALL_JOB_IMAGE).toBe('ghcr.io/bpa-functions/software-install');
});

test('the Job: owned by the Software, its ServiceAccount, arguments naming the generation, env sorted', () => {
  const job = installJob({
    software,
    run: '',
    image: 'registry.example/software-install:1',
    command: softwareInstallConfigSchema.parse({}).INSTALL_JOB_COMMAND,
    env: { SSH_USER: 'root', APT_LOCK_TIMEOUT_SECONDS: '300' },
    activeDeadlineSeconds: 3600,
  });
  expect(job.metadata?.ownerReferences).toEqual([
    { apiVersion: 'bpa.akraino.org/v1alpha1', kind: 'Software', name: 'sw', uid: 'u-1', controller: true },
  ]);
  const pod = job.spec?.template.spec;
  expect(pod?.serviceAccountName).toBe('sw-installer');
  expect(pod?.restartPolicy).toBe('Never');
  expect(pod?.containers[0]?.args).toEqual(['--namespace', 'edge', '--name', 'sw', '--generation', '4']);
  expect(pod?.containers[0]?.env?.map((e) => e.name)).toEqual(['APT_LOCK_TIMEOUT_SECONDS', 'SSH_USER']);
  expect(job.metadata?.labels?.['bpa.akraino.org/software-generation']).toBe('4');
});

test('nodes that joined since the last install are the ones it did not cover', () => {
  const current = [
    { label: 'm1', ip: '10.0.0.1', roles: ['master' as const] },
    { label: 'w1', ip: '10.0.0.2', roles: ['worker' as const] },
    { label: 'w2', ip: '10.0.0.3', roles: ['worker' as const] },
  ];
  expect(
    nodesNotInstalled(
      [
        { node: 'm1', ip: '10.0.0.1' },
        { node: 'w1', ip: '10.0.0.2' },
      ],
      current,
    ),
  ).toEqual([current[2]]);
  // A node re-addressed by the re-provision counts as new.
  expect(nodesNotInstalled([{ node: 'm1', ip: '10.0.0.9' }], current).map((n) => n.label)).toEqual([
    'm1',
    'w1',
    'w2',
  ]);
});

test('the install Job pins the function’s known_hosts, passed as text, and never trusts on first use', async () => {
  const { hostKeyVerification } = await import('../../../functions/software-install/host-keys.js');
  const lines =
    '[10.0.0.1]:22 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPL\n';
  const config = softwareInstallConfigSchema.parse({
    SSH_KNOWN_HOSTS_LINES: lines,
    SSH_KNOWN_HOSTS: '/nonexistent',
  });
  const software = { apiVersion: 'bpa.akraino.org/v1alpha1', kind: 'Software', metadata: { name: 'sw' } };
  // No API call is needed (nor made: the clients are absent) when keys are pinned.
  await expect(hostKeyVerification(config, undefined as never, software as never, 'c')).resolves.toEqual({
    mode: 'known-hosts',
    knownHosts: lines,
  });
});

test('the sweep looks at a Software installing in a Job even while its claim holds, and says how a Job ended', async () => {
  const { needsInstall } = await import('../../../functions/software-install/sweep.js');
  const { endedJobMessage, pendingInstallJob } =
    await import('../../../functions/software-install/install-job-state.js');
  const installing = (installJob?: string) => ({
    apiVersion: 'bpa.akraino.org/v1alpha1',
    kind: 'Software',
    metadata: { name: 'sw', namespace: 'edge', generation: 2 },
    status: {
      conditions: [
        { type: 'Installed', status: 'Unknown', reason: 'Installing', observedGeneration: 2 },
        { type: 'Ready', status: 'Unknown', reason: 'Installing', observedGeneration: 2 },
      ],
      claim: { generation: 2, holder: 'p', expiresAt: new Date(Date.now() + 3600_000).toISOString() },
      ...(installJob ? { installJob } : {}),
    },
  });
  expect(needsInstall(installing() as never)).toBe(false);
  expect(needsInstall(installing('sw-install-2') as never)).toBe(true);
  expect(pendingInstallJob(installing('sw-install-2') as never)).toBe('sw-install-2');
  const job = {
    metadata: { name: 'sw-install-2', namespace: 'edge' },
    spec: { activeDeadlineSeconds: 90 },
    status: {
      failed: 3,
      conditions: [
        {
          type: 'Failed',
          status: 'True',
          reason: 'BackoffLimitExceeded',
          message: 'Job has reached the specified backoff limit',
        },
      ],
    },
  };
  expect(endedJobMessage(job as never, 'sw-install-2')).toBe(
    'Install Job sw-install-2 failed: its pod failed 3 times without recording an outcome ' +
      '(BackoffLimitExceeded: Job has reached the specified backoff limit); see kubectl -n edge logs job/sw-install-2',
  );
});

test('the Job meets Pod Security restricted: numeric non-root user, RuntimeDefault, no escalation, nothing kept', () => {
  const job = installJob({
    software,
    run: '',
    image: 'i',
    command: ['node'],
    env: {},
    activeDeadlineSeconds: 60,
  });
  const pod = job.spec?.template.spec;
  expect(pod?.securityContext).toEqual({
    runAsNonRoot: true,
    runAsUser: 65532,
    runAsGroup: 65532,
    seccompProfile: { type: 'RuntimeDefault' },
  });
  const container = pod?.containers[0];
  expect(container?.securityContext).toMatchObject({
    allowPrivilegeEscalation: false,
    runAsNonRoot: true,
    readOnlyRootFilesystem: true,
    capabilities: { drop: ['ALL'] },
    seccompProfile: { type: 'RuntimeDefault' },
  });
  expect(container?.volumeMounts).toEqual([{ name: 'tmp', mountPath: '/tmp' }]);
  expect(pod?.volumes).toEqual([{ name: 'tmp', emptyDir: { sizeLimit: '64Mi' } }]);
  expect(pod?.hostNetwork).toBeUndefined();
});
