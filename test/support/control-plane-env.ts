/**
 * How the integration project's global setup hands the control plane to test files: environment
 * variables (test workers are separate processes) and a handle on globalThis for the teardown
 * (global setup and teardown share the jest parent process).
 */
import type { ControlPlane } from '../../local/control-plane/index.js';

export const testEnv = {
  /** Admin kubeconfig file of the run's control plane. */
  kubeconfig: 'BPA_TEST_KUBECONFIG',
  /** https://127.0.0.1:<port> of its kube-apiserver. */
  server: 'BPA_TEST_SERVER',
  /** Directory of the kube-apiserver and etcd binaries in use. */
  assetsDir: 'BPA_TEST_ASSETS_DIR',
} as const;

const handleKey = '__bpaTestControlPlane';

type WithHandle = typeof globalThis & { [handleKey]?: ControlPlane };

export const keepControlPlane = (controlPlane: ControlPlane) => {
  (globalThis as WithHandle)[handleKey] = controlPlane;
};

export const takeControlPlane = (): ControlPlane | undefined => {
  const controlPlane = (globalThis as WithHandle)[handleKey];
  delete (globalThis as WithHandle)[handleKey];
  return controlPlane;
};
