/**
 * functions/host-lookup/ is a `func` build context: its package.json starts the bundle that
 * scripts/bundle.mjs writes beside it (dist/index.mjs) with faas-js-runtime, the way
 * `func build`/`func deploy` run it. Started by the runtime's own CLI, it answers a Provisioning
 * event with the real cluster. (faas-js-runtime has no host option and binds `::`; the test only
 * talks to 127.0.0.1.)
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EventTypes } from '../../shared/events/types.js';
import { freeLoopbackPort } from '../../local/control-plane/free-port.js';
import { useTestCluster } from '../support/cluster.js';
import {
  conditionOf,
  createProvisioning,
  provisioningObject,
  readProvisioning,
} from './functions/support/fixtures.js';

const cluster = useTestCluster();
const repository = fileURLToPath(new URL('../..', import.meta.url));
const context = join(repository, 'functions/host-lookup');

async function waitUntilReady(url: string, runtime: ChildProcess, output: () => string): Promise<void> {
  for (;;) {
    if (runtime.exitCode !== null) throw new Error(`faas-js-runtime exited: ${output()}`);
    const ready = await fetch(`${url}/health/readiness`).then(
      (response) => response.ok,
      () => false,
    );
    if (ready) return;
    await new Promise((done) => setTimeout(done, 200));
  }
}

const binaryHeaders = (type: string, id: string) => ({
  'ce-specversion': '1.0',
  'ce-id': id,
  'ce-source': '/apis/v1/namespaces/test',
  'ce-type': type,
  'content-type': 'application/json',
});

describe('func package: host-lookup under faas-js-runtime', () => {
  let runtime: ChildProcess | undefined;
  let url = '';
  let output = '';

  beforeAll(async () => {
    const built = spawnSync('npm', ['run', 'bundle', '--', 'host-lookup'], {
      cwd: repository,
      encoding: 'utf8',
    });
    if (built.status !== 0) throw new Error(`npm run bundle failed: ${built.stdout}${built.stderr}`);
    const packageJson = JSON.parse(readFileSync(join(context, 'package.json'), 'utf8')) as {
      main: string;
      scripts: Record<string, string>;
      dependencies: Record<string, string>;
    };
    const rootPackage = JSON.parse(readFileSync(join(repository, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    expect(packageJson.dependencies['faas-js-runtime']).toBe('3.0.2');
    expect(packageJson.scripts.start).toBe(`faas-js-runtime ./${packageJson.main}`);
    // What the bundle leaves to node_modules is exactly its dependencies, at the repository's versions.
    const bundle = readFileSync(join(context, packageJson.main), 'utf8');
    const packageName = /^(?:@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*/;
    const external = [...bundle.matchAll(/(?:from|import\()\s*["']([^"']+)["']/g)]
      .map((match) => match[1]!)
      .filter((specifier) => !isBuiltin(specifier))
      .map((specifier) => packageName.exec(specifier)?.[0])
      .filter((name): name is string => name !== undefined);
    const { 'faas-js-runtime': _runtime, ...dependencies } = packageJson.dependencies;
    expect(Object.keys(dependencies).sort()).toEqual([...new Set(external)].sort());
    for (const [name, version] of Object.entries(dependencies))
      expect([name, version]).toEqual([name, rootPackage.dependencies[name]]);
    const port = await freeLoopbackPort();
    url = `http://127.0.0.1:${port}`;
    runtime = spawn(
      process.execPath,
      [
        join(repository, 'node_modules/faas-js-runtime/bin/cli.js'),
        `./${packageJson.main}`,
        '--port',
        String(port),
      ],
      {
        cwd: context,
        env: {
          PATH: process.env.PATH,
          KUBECONFIG: cluster.kubeconfigPath,
          BMH_NAMESPACE: cluster.namespace,
          SWEEP_NAMESPACES: cluster.namespace,
          LOG_LEVEL: 'warn',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    runtime.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    runtime.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await waitUntilReady(url, runtime, () => output);
  }, 180_000);

  afterAll(async () => {
    if (runtime && runtime.exitCode === null) {
      const exited = new Promise((done) => runtime?.once('exit', done));
      runtime.kill('SIGTERM');
      await exited;
    }
  });

  it('answers provisioning.failed for a MAC no host has, and records HostsResolved=False', async () => {
    const namespace = cluster.namespace;
    const mac = 'ee:ee:00:00:00:99';
    const created = await createProvisioning(
      cluster.kubeConfig,
      provisioningObject({
        name: 'unknown-mac',
        namespace,
        cluster: 'unknown-mac',
        masters: [{ label: 'master-1', mac }],
      }),
    );
    const response = await fetch(url, {
      method: 'POST',
      headers: binaryHeaders('dev.knative.apiserver.resource.add', 'add-1'),
      body: JSON.stringify(created),
    });
    const body = await response.text();
    expect([response.status, response.headers.get('ce-type')]).toEqual([200, EventTypes.provisioningFailed]);
    expect(JSON.parse(body)).toMatchObject({
      provisioning: { namespace, name: 'unknown-mac', uid: created.metadata.uid },
      step: 'HostsResolved',
      reason: 'HostNotFound',
      message: `Host with MAC Address ${mac} not found`,
    });
    const stored = await readProvisioning(cluster.kubeConfig, namespace, 'unknown-mac');
    expect(conditionOf(stored, 'HostsResolved')).toMatchObject({
      status: 'False',
      message: `Host with MAC Address ${mac} not found`,
    });
  }, 60_000);

  it('answers 400 to an event whose data is not an object', async () => {
    const response = await fetch(url, {
      method: 'POST',
      headers: binaryHeaders('dev.knative.apiserver.resource.add', 'bad-1'),
      body: JSON.stringify('not an object'),
    });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('does not match its schema');
  }, 60_000);
});
