import type { ControlPlane, ControlPlaneOptions } from '../control-plane/control-plane.js';
import { startControlPlane } from '../control-plane/control-plane.js';
import { controlPlaneVersions } from '../control-plane/assets.js';
import type { LocalNode, NodeOptions } from './node.js';
import { startNode } from './node.js';
import { checkNodePrerequisites } from './preflight.js';
import { claimSlot, releaseSlot } from './slot.js';

/**
 * The whole one-machine cluster: etcd, kube-apiserver, kube-controller-manager, kube-scheduler
 * (all real) and the node (our imitation of a kubelet, running pods as local processes). The
 * node's slot is claimed first, so that the control plane gets a Service range no other node on
 * the machine uses.
 */
export interface LocalClusterOptions extends Omit<
  ControlPlaneOptions,
  'controllers' | 'serviceClusterIpRange'
> {
  node?: Omit<NodeOptions, 'kubeConfig' | 'ca' | 'serviceClusterIpRange' | 'slot'>;
}

export interface LocalCluster {
  controlPlane: ControlPlane;
  node: LocalNode;
  /** Stops the node (its pods first), then the control plane. Idempotent. */
  stop(): Promise<void>;
}

export async function startLocalCluster(options: LocalClusterOptions = {}): Promise<LocalCluster> {
  // Before anything starts: callers fall back to a control plane alone on this one-line error.
  await checkNodePrerequisites();
  const slot = claimSlot();
  let controlPlane: ControlPlane;
  try {
    controlPlane = await startControlPlane({
      ...options,
      controllers: true,
      serviceClusterIpRange: slot.serviceClusterIpRange,
    });
  } catch (error) {
    releaseSlot(slot);
    throw error;
  }
  let node: LocalNode;
  try {
    node = await startNode({
      kubeletVersion: controlPlaneVersions().kubernetes,
      ...options.node,
      kubeConfig: controlPlane.kubeConfig,
      ca: controlPlane.pki.ca,
      serviceClusterIpRange: controlPlane.serviceClusterIpRange,
      slot,
    });
  } catch (error) {
    await controlPlane.stop();
    releaseSlot(slot);
    throw error;
  }
  let stopping: Promise<void> | undefined;
  return {
    controlPlane,
    node,
    stop: () => {
      stopping ??= (async () => {
        await node.stop();
        await controlPlane.stop();
      })();
      return stopping;
    },
  };
}
