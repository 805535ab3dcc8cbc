// The control plane of the tests and of the local stack: real etcd + kube-apiserver.
export type {
  ControlPlane,
  ControlPlaneOptions,
  ControlPlanePki,
  ControlPlaneProcessInfo,
} from './control-plane.js';
export { startControlPlane } from './control-plane.js';
export type { ControlPlaneBinaries, ControlPlaneVersions } from './assets.js';
export { binaryCacheDir, controlPlaneVersions, locateBinaries } from './assets.js';
export type { CrdInput, InstalledCrd } from './crds.js';
export { installCrds, loadCrds } from './crds.js';
export type { CrdSelection } from './crd-sources.js';
export { projectCrds } from './crd-sources.js';
export { minimalBareMetalHostCrd } from './baremetalhost-crd.js';
export { repoRoot } from './repo-root.js';
export { applyObject, applyObjects, isStatus, parseYamlObjects, readYamlObjects } from './apply.js';
export { createNamespace, deleteNamespace, uniqueNamespaceName } from './namespaces.js';
export type { AdminAccess } from './kubeconfig.js';
export { adminKubeConfig, kubeconfigDocument, writeKubeconfigFile } from './kubeconfig.js';
export type { CertificateAuthority, CertificateRequest, IssuedCertificate } from './pki.js';
export { createCertificateAuthority, issueCertificate } from './pki.js';
export { freeLoopbackPort, freeLoopbackPorts } from './free-port.js';
export type { ManagedProcess, ProcessExit } from './managed-process.js';
export { startManagedProcess } from './managed-process.js';
export { waitFor } from './wait.js';
export { onboardCommand, onboardNamespace, shippedFunctionsNamespace, tenantRoleBindings } from './tenant.js';
export type { OnboardOptions } from './tenant.js';
