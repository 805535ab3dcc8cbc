// The local node: OUR IMITATION of a kubelet, running pods as local processes (docs/node.md). No
// container runtime can be had on these machines, so this is the one part of the one-machine
// cluster that is not Kubernetes' own code.
export type { LocalNode, NodeOptions } from './node.js';
export { startNode } from './node.js';
export type { LocalCluster, LocalClusterOptions } from './local-cluster.js';
export { startLocalCluster } from './local-cluster.js';
export { checkNodePrerequisites } from './preflight.js';
export type { ImageEntry, ImageMap } from './image-map.js';
export { defaultImageMapFile, imageMapFileSchema, loadImageMap, lookupImage } from './image-map.js';
export type { NodeSlot } from './slot.js';
export { claimSlot, releaseSlot, slotLayout } from './slot.js';
