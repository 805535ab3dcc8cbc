// The real node: containerd + kubelet + kube-proxy in namespaces of their own (docs/node.md).
export type { KubeletNode, KubeletNodeOptions, NodeControlPlane } from './node.js';
export { startKubeletNode } from './node.js';
export type { NodeBinaries } from './assets.js';
export { locateNodeBinaries } from './assets.js';
export type { LayerEntry, OciImageSpec, OciImageTar } from './oci-layout.js';
export { buildOciImageTar } from './oci-layout.js';
export { importImage, pauseImageName, writePauseImage } from './images.js';
export type { CleanupTarget, NamespacePin } from './cleanup.js';
export { leftovers, pinMountNamespace } from './cleanup.js';
export { busyboxEntries, busyboxImage, sharedLibraries, writeBusyboxImage } from './busybox-image.js';
export { kubeletNodeApiAddress } from './network.js';
export type { LabAttachment } from './network.js';
