import { sha256Hex } from './hash.js';
import type { KudNodePath } from './kud-job.js';

/**
 * Everything that decides what the KUD installer Job does (contract sections 5 and 12): what it
 * mounts (the inventory text, as written at launch in the functions' namespace, and the SSH key
 * Secret's name), the image, the installer's arguments and the environment it gets. Two launches with the same
 * inputs would do the same thing, so an existing Job with the same hash is the launch's success;
 * any difference (a new plugin, another subnet, new installer settings) is a new Job.
 */
export interface LaunchInputs {
  /** The hosts.ini text (or its sha256: both give the same hash). */
  inventorySha256: string;
  image: string;
  cluster: string;
  podSubnet?: string | null;
  kudPlugins?: readonly string[] | null;
  /**
   * The installer settings the Job's env comes from (`kud-installer`'s data); absent when there
   * is no such ConfigMap. Their values count, not only their names: a changed setting changes
   * what the installer does.
   */
  installerSettings?: Readonly<Record<string, string>> | null;
  /** The SSH key Secret of the functions' namespace the pod mounts (SSH_KEY_SECRET). */
  sshKeySecret: string;
  /** The namespace the Job and what it mounts live in (FUNCTIONS_NAMESPACE). */
  namespace: string;
  /** The day-2 path (`--scale`, `--remove-node` and their nodes); absent for the full install. */
  path?: KudNodePath | null;
}

/** Version of the hashed form: bump it when the fields change, so old Jobs count as different. */
const launchHashVersion = 2;

/** Lower-case hex sha256 of a canonical JSON form of the inputs (key order never matters). */
export function launchHash(inputs: LaunchInputs): string {
  const settings = inputs.installerSettings;
  const canonical = {
    v: launchHashVersion,
    inventorySha256: inputs.inventorySha256,
    image: inputs.image,
    cluster: inputs.cluster,
    podSubnet: inputs.podSubnet || null,
    // Order matters to the installer (`--plugins a b` is passed as written).
    kudPlugins: inputs.kudPlugins && inputs.kudPlugins.length > 0 ? [...inputs.kudPlugins] : [],
    installerSettings: settings
      ? Object.keys(settings)
          .sort()
          .map((key) => [key, settings[key]])
      : null,
    sshKeySecret: inputs.sshKeySecret,
    namespace: inputs.namespace,
    // Only when set: the hash of a full install is the one it always was.
    ...(inputs.path ? { path: { kind: inputs.path.kind, nodes: [...inputs.path.nodes] } } : {}),
  };
  return sha256Hex(JSON.stringify(canonical));
}

/**
 * The hash of everything but the nodes (contract section 14): two launches with the same settings
 * hash differ only in their inventory, so a cluster installed with one can be grown or shrunk to
 * the other; any other difference (image, plugins, subnet, installer settings, cluster type) needs
 * the full install.
 */
export function launchSettingsHash(
  inputs: Omit<LaunchInputs, 'inventorySha256' | 'path'>,
  clusterType: string,
): string {
  return sha256Hex(JSON.stringify({ launch: launchHash({ ...inputs, inventorySha256: '' }), clusterType }));
}
