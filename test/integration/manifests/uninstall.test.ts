/**
 * Install and uninstall as docs/deploy.md says (contract section 13, "Install and uninstall are
 * safe"): the install block of §2 and the uninstall blocks of §10 run as written (bash, kubectl,
 * `<namespace>` replaced by this test's tenant namespace) against a control plane of this file's
 * own, with the namespace and garbage-collection controllers (kube-controller-manager): the
 * steps delete the functions' namespace, cluster-scoped roles and the CRDs, which the run's
 * shared control plane cannot lose. The Knative and BareMetalHost CRDs are installed with it (as
 * §1 asks of a cluster), the bpa.akraino.org ones only by the documented `manifests/crds`.
 *
 * The functions run in this process (their real HTTP servers, the test playing the
 * ApiServerSource and the PingSource) against that API, as admin: what they may do under the
 * shipped RBAC is rbac-exercised.test.ts's subject. No KUD Job is launched (no inventory-render,
 * no node), so a deletion's cleanup has nothing on a node to remove; the cleanup Job's path in a
 * deleted namespace runs on the node in functions/cluster-lifecycle.test.ts.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { definition as hostLookup } from '../../../functions/host-lookup/index.js';
import { definition as kudJobLaunch } from '../../../functions/kud-job-launch/index.js';
import {
  createNamespace,
  isStatus,
  projectCrds,
  repoRoot,
  startControlPlane,
  waitFor,
  type ControlPlane,
} from '../../../local/control-plane/index.js';
import { docShellBlock } from '../../unit/manifests/kustomize.js';
import { kubectl } from './kubectl.js';
import { ChainHarness, pingEvent, sourceEvent } from '../functions/support/chain-harness.js';
import { bpaGroup, createBareMetalHost, createProvisioning, createSoftware, provisioningObject } from '../functions/support/fixtures.js';

const tenant = 'uninstall-tenant';
const bmhNamespace = 'metal3'; // the shipped BMH_NAMESPACE: Metal3's, which §1 presumes
const cleanupFinalizer = 'bpa.akraino.org/cleanup';
const otherFinalizer = 'example.com/keep';
const mac = (i: number) => `ee:13:00:00:00:${String(i).padStart(2, '0')}`;

interface Shell {
  code: number;
  stdout: string;
  stderr: string;
}

describe('install and uninstall in the documented order', () => {
  let controlPlane: ControlPlane;
  let harness: ChainHarness | undefined;
  const admin = () => controlPlane.kubeConfig;
  const custom = () => admin().makeApiClient(CustomObjectsApi);
  const core = () => admin().makeApiClient(CoreV1Api);
  const extensions = () => admin().makeApiClient(ApiextensionsV1Api);

  /** A docs/deploy.md block, run as written from the repository's root with this cluster's kubeconfig. */
  const runDocBlock = (name: string): Promise<Shell> =>
    new Promise((resolve, reject) => {
      const script = docShellBlock(name).replaceAll('<namespace>', tenant);
      execFile(
        'bash',
        ['-euo', 'pipefail', '-c', script],
        {
          cwd: repoRoot(),
          env: { ...process.env, KUBECONFIG: controlPlane.kubeconfigPath },
          encoding: 'utf8',
          maxBuffer: 16 * 1024 * 1024,
          timeout: 300_000,
        },
        (error, stdout, stderr) => {
          if (error && typeof error.code !== 'number') reject(error);
          else resolve({ code: typeof error?.code === 'number' ? error.code : 0, stdout, stderr });
        },
      );
    });
  const expectRan = async (name: string) => {
    const result = await runDocBlock(name);
    expect({ block: name, code: result.code, stderr: result.code === 0 ? '' : result.stderr }).toEqual({
      block: name,
      code: 0,
      stderr: '',
    });
    return result;
  };

  const list = async (plural: string) =>
    (
      (await custom().listClusterCustomObject({ ...bpaGroup, plural })) as {
        items: { metadata: { namespace: string; name: string; finalizers?: string[]; deletionTimestamp?: string } }[];
      }
    ).items;
  const read = (plural: string, name: string) =>
    custom().getNamespacedCustomObject({ ...bpaGroup, plural, namespace: tenant, name }) as Promise<{
      metadata: { finalizers?: string[]; deletionTimestamp?: string };
    }>;
  const bpaCrds = async () =>
    (await extensions().listCustomResourceDefinition()).items
      .map((crd) => crd.metadata?.name ?? '')
      .filter((name) => name.endsWith('.bpa.akraino.org'))
      .sort();

  /** The functions of manifests/ (those that put and take the finalizer) against this API. */
  const startFunctions = async () => {
    harness = new ChainHarness(admin(), {
      FUNCTIONS_NAMESPACE: 'bpa-system',
      BMH_NAMESPACE: bmhNamespace,
      IP_SOURCES: 'nics',
    });
    await harness.start([hostLookup, kudJobLaunch]);
  };
  const stopFunctions = async () => {
    await harness?.stop();
    harness = undefined;
  };
  /** What the PingSource does while `kubectl wait` waits: a sweep of each function, again and again. */
  const sweepUntil = (done: Promise<unknown>) => {
    let stop = false;
    const end = () => {
      stop = true;
    };
    done.then(end, end);
    return (async () => {
      while (!stop) {
        for (const target of ['host-lookup', 'kud-job-launch'])
          expect((await (harness as ChainHarness).deliver(target, pingEvent())).status).toBe(204);
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
    })();
  };
  const setFinalizers = (name: string, finalizers: string[]) =>
    custom().patchNamespacedCustomObject(
      { ...bpaGroup, plural: 'provisionings', namespace: tenant, name, body: { metadata: { finalizers } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  /** A Provisioning host-lookup has claimed: it carries the cleanup finalizer. */
  const claimed = async (name: string, i: number) => {
    await createBareMetalHost(admin(), {
      name: `host-${i}`,
      namespace: bmhNamespace,
      bootMac: mac(i),
      nics: [{ name: 'eth0', mac: mac(i), ip: `10.13.0.${i}` }],
    });
    const created = await createProvisioning(
      admin(),
      provisioningObject({ name, namespace: tenant, cluster: name, masters: [{ label: 'm', mac: mac(i) }] }),
    );
    await (harness as ChainHarness).publish(sourceEvent('add', created));
    expect((await read('provisionings', name)).metadata.finalizers).toEqual([cleanupFinalizer]);
  };

  beforeAll(async () => {
    // The cluster §1 presumes: Knative's CRDs and Metal3's BareMetalHost; not the project's own.
    const ownCrds = `${repoRoot()}/manifests/crds/`;
    const crds = projectCrds().inputs.filter((input) => typeof input !== 'string' || !input.startsWith(ownCrds));
    if (!process.env.KNATIVE_CRDS_DIR)
      throw new Error('KNATIVE_CRDS_DIR is not set: `kubectl apply -k manifests/` needs the Knative CRDs');
    controlPlane = await startControlPlane({ crds, controllers: true, handleSignals: false });
    await createNamespace(admin(), bmhNamespace);
    await createNamespace(admin(), tenant);
  }, 300_000);

  afterAll(async () => {
    await stopFunctions();
    await controlPlane?.stop();
  });

  it('installs with the CRDs on their own; deleting the functions leaves the CRDs and every user resource', async () => {
    await expectRan('install');
    expect(await bpaCrds()).toEqual(['images.bpa.akraino.org', 'provisionings.bpa.akraino.org', 'softwares.bpa.akraino.org']);
    await startFunctions();
    await claimed('kept', 1);
    await claimed('orphaned', 2);
    // Someone else's finalizer beside ours: the documented release must leave this one alone.
    await claimed('shared', 3);
    await setFinalizers('shared', [cleanupFinalizer, otherFinalizer]);
    await createSoftware(admin(), tenant, 'tools', 'kept', { masterSoftware: ['htop'] });

    // The functions' kustomization alone (what removed every user's resource before section 13).
    await stopFunctions();
    expect((await kubectl(controlPlane.kubeconfigPath, ['delete', '-k', join(repoRoot(), 'manifests')])).code).toBe(0);
    await expect(core().readNamespace({ name: 'bpa-system' })).rejects.toMatchObject({ code: 404 });
    expect(await bpaCrds()).toEqual(['images.bpa.akraino.org', 'provisionings.bpa.akraino.org', 'softwares.bpa.akraino.org']);
    for (const name of ['kept', 'orphaned'])
      expect((await read('provisionings', name)).metadata).toMatchObject({ finalizers: [cleanupFinalizer] });
    expect((await read('provisionings', 'kept')).metadata.deletionTimestamp).toBeUndefined();
    expect((await read('softwares', 'tools')).metadata.deletionTimestamp).toBeUndefined();
  }, 300_000);

  it('keeps a Provisioning deleted while the functions are away; the documented release frees it alone', async () => {
    for (const name of ['orphaned', 'shared'])
      await custom().deleteNamespacedCustomObject({ ...bpaGroup, plural: 'provisionings', namespace: tenant, name });
    // Nobody removes the finalizer: it waits, Terminating (its namespace would too).
    expect((await read('provisionings', 'orphaned')).metadata).toMatchObject({
      finalizers: [cleanupFinalizer],
      deletionTimestamp: expect.any(String),
    });
    const released = await expectRan('uninstall:release');
    await expect(read('provisionings', 'orphaned')).rejects.toMatchObject({ code: 404 });
    // Another finalizer too: named, and left as it was.
    expect(released.stderr).toContain(`${tenant}/shared: another finalizer too`);
    expect((await read('provisionings', 'shared')).metadata.finalizers).toEqual([cleanupFinalizer, otherFinalizer]);
    // One not being deleted is left alone, finalizer included.
    expect((await read('provisionings', 'kept')).metadata).toMatchObject({ finalizers: [cleanupFinalizer] });
    expect((await read('provisionings', 'kept')).metadata.deletionTimestamp).toBeUndefined();
    // Its owner lets go of it; ours stays until the functions are back (next test).
    await setFinalizers('shared', [cleanupFinalizer]);
  }, 120_000);

  it('uninstalls in the documented order: no bpa.akraino.org finalizer is left, every namespace finishes', async () => {
    // The functions back (docs/deploy.md's way out of a deletion that waits for them): step 1
    // below waits for `shared` too, deleted while they were away.
    await expectRan('install');
    await startFunctions();
    expect((await read('provisionings', 'shared')).metadata.deletionTimestamp).toEqual(expect.any(String));
    // Step 1 while the functions run: `kubectl wait` returns once they removed every finalizer.
    const step1 = runDocBlock('uninstall:resources');
    await sweepUntil(step1);
    expect((await step1).code).toBe(0);
    for (const plural of ['provisionings', 'softwares', 'images'])
      for (const item of await list(plural))
        expect({ plural, ...item.metadata, finalizers: (item.metadata.finalizers ?? []).filter((f) => f.startsWith('bpa.akraino.org/')) }).toMatchObject({ finalizers: [] });
    expect(await list('provisionings')).toEqual([]);

    await stopFunctions();
    await expectRan('uninstall:functions');
    await expect(core().readNamespace({ name: 'bpa-system' })).rejects.toMatchObject({ code: 404 });
    const bindings = await admin().makeApiClient(RbacAuthorizationV1Api).listNamespacedRoleBinding({ namespace: tenant });
    expect(bindings.items.filter((b) => b.metadata?.name?.startsWith('bpa-functions:'))).toEqual([]);
    // The user's Software outlived the functions; step 4 takes it with its CRD.
    expect((await read('softwares', 'tools')).metadata.deletionTimestamp).toBeUndefined();
    await expectRan('uninstall:crds'); // kubectl waits until each CRD is gone: none hangs on a finalizer
    expect(await bpaCrds()).toEqual([]);

    // The tenant's namespace is deleted, nothing of ours holds it.
    await core().deleteNamespace({ name: tenant });
    await waitFor(
      async () =>
        core()
          .readNamespace({ name: tenant })
          .then(() => undefined)
          .catch((error: unknown) => (isStatus(error, 404) ? true : Promise.reject(error))),
      { what: `namespace ${tenant} to be gone`, timeoutMs: 120_000, intervalMs: 500 },
    );
  }, 600_000);
});
