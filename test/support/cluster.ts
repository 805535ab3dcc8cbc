/**
 * The run's control plane, seen from a test file: an admin client and a namespace of its own.
 *
 *   const cluster = useTestCluster();
 *   it('...', async () => { cluster.kubeConfig.makeApiClient(CoreV1Api) ... cluster.namespace });
 */
import { basename } from 'node:path';
import { afterAll, beforeAll, expect } from '@jest/globals';
import { KubeConfig } from '@kubernetes/client-node';
import { createNamespace, deleteNamespace, uniqueNamespaceName } from '../../local/control-plane/index.js';
import { testEnv } from './control-plane-env.js';

export interface TestCluster {
  readonly kubeConfig: KubeConfig;
  readonly kubeconfigPath: string;
  /** https://127.0.0.1:<port> */
  readonly server: string;
  /** Created in beforeAll, deleted in afterAll; unique to this test file. */
  readonly namespace: string;
}

/** The admin kubeconfig file of the run's control plane (set by the global setup). */
export function testKubeconfigPath(): string {
  const path = process.env[testEnv.kubeconfig];
  if (!path) {
    throw new Error(
      `${testEnv.kubeconfig} is not set: run this file in the jest 'integration' project, whose global setup starts the control plane`,
    );
  }
  return path;
}

/** Registers beforeAll/afterAll hooks; read the fields inside tests or hooks, not at load time. */
export function useTestCluster(options: { namespacePrefix?: string } = {}): TestCluster {
  let state:
    { kubeConfig: KubeConfig; kubeconfigPath: string; server: string; namespace: string } | undefined;
  const ready = () => {
    if (!state)
      throw new Error('useTestCluster(): read the cluster inside a test or a hook, after beforeAll');
    return state;
  };

  beforeAll(async () => {
    const kubeconfigPath = testKubeconfigPath();
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(kubeconfigPath);
    const testFile = expect.getState().testPath;
    const prefix =
      options.namespacePrefix ?? (testFile ? basename(testFile).replace(/\.test\.ts$/, '') : 'test');
    const namespace = await createNamespace(kubeConfig, uniqueNamespaceName(prefix));
    state = { kubeConfig, kubeconfigPath, server: kubeConfig.getCurrentCluster()?.server ?? '', namespace };
  });

  afterAll(async () => {
    if (state) await deleteNamespace(state.kubeConfig, state.namespace);
  });

  return {
    get kubeConfig() {
      return ready().kubeConfig;
    },
    get kubeconfigPath() {
      return ready().kubeconfigPath;
    },
    get server() {
      return ready().server;
    },
    get namespace() {
      return ready().namespace;
    },
  };
}
