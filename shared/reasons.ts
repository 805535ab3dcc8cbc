/**
 * The catalogue of condition reasons: every CamelCase reason a function writes on a
 * Provisioning's or a Software's status conditions (and as the reason of the matching Event),
 * what it means, and what the periodic sweep does about it. Like the event catalogue
 * (shared/events/types.ts), this is the one place a reason is named; code uses `Reason.X`.
 *
 * `sweep` says what re-runs a step stopped with this reason:
 * - `retry`: the world can fix it without a new generation (a host or a lease that appears
 *   later, a Secret created afterwards), so the sweep tries the step again;
 * - `change`: only a spec change (a new generation) fixes it; the sweep leaves it alone, so a
 *   failure is reported once instead of looping;
 * - `hourly`: the API server refused the work (403, 422: RBAC, admission); a change of the
 *   resource or of the cluster's configuration fixes it, which nothing announces, so the sweep
 *   tries again at most once an hour, never as a loop.
 * Progress and success reasons have no `sweep`: they are not a stop. A transient fault is
 * written as Unknown with the error's own reason (shared/k8s/retrying-condition.ts) and is
 * always re-driven, whatever its reason.
 */

/** What re-runs a step that stopped with a reason. */
export type SweepPolicy = 'retry' | 'change' | 'hourly';

export interface ReasonSpec {
  /** The condition status this reason goes with. */
  status: 'True' | 'False' | 'Unknown';
  /** What it means, for readers of status and of this file. */
  means: string;
  /** For a stop (False, or a waiting Unknown): what re-runs the step. */
  sweep?: SweepPolicy;
}

/** A stop on a False condition: what re-runs its step (`sweep`, above), then what it means. */
const stop = (sweep: SweepPolicy, means: string) => ({ status: 'False', means, sweep }) as const;

export const conditionReasons = {
  // Provisioning: progress and success.
  HostsResolved: { status: 'True', means: 'Every node has an IP address; status.nodes lists them' },
  InventoryRendered: { status: 'True', means: 'hosts.ini is stored in the <cluster>-inventory ConfigMap' },
  JobLaunched: { status: 'True', means: 'The kud-<cluster> Job exists for this generation' },
  KudInstalled: { status: 'True', means: 'The KUD Job succeeded; <cluster>-configmap holds the node IPs' },
  ClusterReady: { status: 'True', means: 'Ready: the cluster is installed' },
  Provisioning: { status: 'Unknown', means: 'Ready: a step succeeded and the chain goes on' },

  // Provisioning: the spec is wrong (only a spec change helps).
  InvalidProvisioning: stop('change', 'The resource fails its schema'),
  InvalidMacAddress: stop('change', 'A MAC address is malformed'),
  MacAddressMissing: stop('change', 'A master or worker has no MAC address'),
  MastersMissing: stop('change', 'The spec lists no master'),
  DuplicateNodeLabel: stop('change', 'Two nodes share a label'),
  DuplicateMacAddress: stop('change', 'Two nodes share a MAC address'),

  // Provisioning: the world is not (yet) as the spec says.
  HostNotFound: stop('retry', 'No BareMetalHost has the MAC address'),
  IpAddressNotFound: stop('retry', 'No IP source knows the MAC address'),
  VmNotFound: stop(
    'retry',
    'No running VM (Virtlet pod or KubeVirt VirtualMachineInstance) has the MAC address',
  ),
  ImageNotFound: stop(
    'retry',
    'spec.image names an Image that is not in the namespace; nothing is written to the hosts',
  ),
  ImageNotReady: stop(
    'retry',
    'spec.image names an Image that is not verified (Ready) yet; nothing is written to the hosts',
  ),
  WaitingForProvisioning: {
    status: 'Unknown',
    means:
      "A BareMetalHost is not yet `provisioned` or `externally provisioned` in Metal3's status.provisioning.state (contract section 13), or not yet inspected while its node asks for cpu or memory (the preflight, contract section 14: nothing is claimed or written to a host until then); the message names each such host and its state. The sweep looks again",
    sweep: 'retry',
  },
  HostProvisioningFailed: stop(
    'retry',
    "A BareMetalHost is in one of Metal3's error states (status.errorType, operationalStatus error); the message is Metal3's. The sweep looks again, so the Provisioning proceeds once Metal3 recovers the host",
  ),
  PreflightFailed: stop(
    'retry',
    "A BareMetalHost's inspected hardware (status.hardware.cpu.count, ramMebibytes) is less than its node's cpu or memory, or Metal3 never inspected it (contract section 14); nothing is claimed or written to a host. The message names the host, what it has and what the node asks. The sweep looks again, so a smaller spec or a re-inspected host lets it proceed",
  ),
  PreviousJobRunning: stop(
    'retry',
    'An older Job with another inventory still runs; it is replaced once it finishes',
  ),
  JobFailed: stop('change', 'The KUD Job failed (contract section 6 wording)'),
  MasterRemovalRefused: stop(
    'change',
    'The spec removes masters from an installed cluster that etcd would lose its quorum without (the masters that stay must be more than half of the former ones: 3 -> 2 goes, 2 -> 1 does not), or removes the first master, which Kubespray cannot remove (contract section 14); nothing is run, nothing is removed',
  ),
  MixedNodeChange: stop(
    'change',
    'The spec adds and removes nodes of an installed cluster in one change; Kubespray joins (scale.yml) and removes (remove-node.yml) in separate runs, so remove first, then add (contract section 14); nothing is run',
  ),

  // Provisioning: its lifecycle (contract section 10).
  ClusterNameInUse: stop(
    'retry',
    'Another Provisioning owns the cluster name; this one proceeds once the name is free',
  ),
  HostInUse: stop(
    'retry',
    'A BareMetalHost (spec.consumerRef) or VM pod the spec names is used by another Provisioning or a Metal3Machine; nothing is touched, and this one proceeds once the host is released',
  ),
  ObjectConflict: stop(
    'retry',
    'An object the chain would write exists and was not created by bpa-functions for it',
  ),
  JobMissing: {
    status: 'False',
    means: 'The KUD Job disappeared while awaited; a new one is launched for the generation',
  },
  JobRefused: stop(
    'hourly',
    'The API server refused the KUD Job (403, 422: RBAC, an admission webhook or policy)',
  ),
  JobDeadlineExceeded: stop('change', 'The KUD Job ran past its deadline'),
  Cancelled: stop(
    'change',
    'bpa.akraino.org/cancel stopped the KUD Job; bpa.akraino.org/retry or a spec change re-runs it',
  ),
  VmNamespacesNotConfigured: stop(
    'retry',
    'cluster-type virtlet-vm or kubevirt-vm but no VM_NAMESPACES configured',
  ),
  // Both kinds: the pause (contract section 14, shared/k8s/paused.ts), on the `Paused` condition.
  Paused: {
    status: 'True',
    means:
      'bpa.akraino.org/paused is set: no function acts on the object (no step, sweep, cleanup or Job completion) until it is removed',
  },
  Resumed: {
    status: 'False',
    means: 'bpa.akraino.org/paused was removed: the functions act again, starting with the next step',
  },
  Pending: {
    status: 'True',
    means: 'Reconciling (shared/core/kstatus.ts): no step has reported on this generation yet',
  },
  Deleting: { status: 'Unknown', means: 'Deleted: the cleanup (Job, KUD directory, cluster name) runs' },
  KubeconfigPublished: {
    status: 'True',
    means: "KUD's admin.conf is in the Secret <cluster>-admin-kubeconfig (status.kubeconfigSecret)",
  },
  KubeconfigPublishing: {
    status: 'Unknown',
    means: "The publisher Job reads admin.conf on the KUD pod's node and writes the kubeconfig Secret",
  },
  KubeconfigPublishFailed: stop(
    'change',
    'The publisher Job failed (e.g. KUD wrote no admin.conf); its pod log says why',
  ),
  KubeconfigUnavailable: stop(
    'hourly',
    "The KUD Job's pod (hence the node holding admin.conf) is gone, or the publisher cannot be created",
  ),

  // Software.
  Installed: { status: 'True', means: 'Every node of the cluster has the packages' },
  Installing: { status: 'Unknown', means: 'An install of this generation is running (a claim holds it)' },
  ClusterNotReady: {
    status: 'Unknown',
    means: "The cluster's ConfigMap does not exist yet; installs start on cluster.ready",
    sweep: 'retry',
  },
  InvalidSoftware: stop('change', 'The resource fails its schema'),
  InvalidPackageName: stop('change', 'A package name is not a valid word'),
  InvalidPackageVersion: stop('change', 'A package version is not a valid word'),
  InvalidSoftwareItem: stop('change', 'A software item is neither a package name nor {<package>: {version}}'),
  SshKeySecretMissing: stop('retry', 'The SSH key Secret (id_rsa) is not in the namespace'),
  InstallFailed: stop('change', 'The install failed on at least one host'),
  InstallJobFailed: stop(
    'change',
    'The install Job ended without recording an outcome (its pods failed backoffLimit+1 times, or it ran past its deadline)',
  ),
} as const satisfies Record<string, ReasonSpec>;

export type ConditionReason = keyof typeof conditionReasons;

/** An Event-only reason: what it means and the Event type it goes with. */
export interface EventReasonSpec {
  type: 'Normal' | 'Warning';
  means: string;
}

/**
 * Reasons that only ever appear on core/v1 Events (never on a condition): every Event a
 * function writes has a reason from `conditionReasons` or from here (or the reason of a caught
 * error, below), so a stray string literal fails the type check.
 */
export const eventReasons = {
  // Software.
  InstallJobCreated: {
    type: 'Normal',
    means: 'The install Job for this generation of the Software was created (one per generation)',
  },
  InstallRetrying: {
    type: 'Warning',
    means:
      'A host failed with a transient error (connection refused, a lost session); the install Job tries it again',
  },
  HostKeysForgotten: {
    type: 'Normal',
    means: 'bpa.akraino.org/forget-host-keys dropped the recorded SSH host keys of the listed hosts',
  },
  // Provisioning.
  ForeignHostImage: {
    type: 'Warning',
    means:
      "A BareMetalHost keeps a spec.image bpa-functions did not write; the Provisioning's Image is not written there",
  },
  CleanupDone: { type: 'Normal', means: "The cluster's KUD directory was removed from the node" },
  CleanupTimedOut: {
    type: 'Warning',
    means:
      'The cleanup Job failed or did not finish in CLEANUP_TIMEOUT_SECONDS; the finalizer (or the old cluster name) is released anyway and the KUD directory may be left on the node',
  },
  ClusterNameReleased: {
    type: 'Normal',
    means: 'A renamed Provisioning released its old cluster name once the objects of that name were gone',
  },
  // Image (its condition reasons are its own: docs/images.md).
  Uploaded: { type: 'Normal', means: "The Image's bytes are in the store; verification starts" },
  Verified: {
    type: 'Normal',
    means: "The stored bytes match the Image's length and checksums; status.url serves them",
  },
  LengthMismatch: {
    type: 'Warning',
    means: 'The store holds another number of bytes than the Image declares',
  },
  ChecksumMismatch: { type: 'Warning', means: "The stored bytes' sha256 or sha512 differs from the Image's" },
} as const satisfies Record<string, EventReasonSpec>;

declare const caught: unique symbol;

/**
 * The reason a caught error carries (BpaError.reason: an API fault such as KubernetesForbidden,
 * a spec error from a parser). Not catalogued here: it is the error's own, written as it is
 * (a transient fault as Unknown, see above). Only `errorReason` makes one, so a literal cannot
 * pass as one.
 */
export type ErrorReason = string & { readonly [caught]: true };
export const errorReason = (error: { reason: string }): ErrorReason => error.reason as ErrorReason;

/** A reason a step may end with: from the catalogue, or a caught error's own. */
export type StepReason = ConditionReason | ErrorReason;

/** A reason an Event may carry. */
export type EventReason = ConditionReason | keyof typeof eventReasons | ErrorReason;

/** `Reason.HostNotFound === 'HostNotFound'`: reasons by name, typed, from the catalogue. */
export const Reason = Object.fromEntries(Object.keys(conditionReasons).map((name) => [name, name])) as {
  readonly [K in ConditionReason]: K;
};

/** True when the sweep re-runs a step stopped with this reason (see `sweep` above). */
export function retriedBySweep(reason: string | undefined): boolean {
  const spec = reason === undefined ? undefined : (conditionReasons as Record<string, ReasonSpec>)[reason];
  return spec?.sweep === 'retry';
}

/** How long a condition with an `hourly` reason stays before the sweep tries its step again. */
export const hourlyRetrySeconds = 3600;

/**
 * True when the sweep re-runs a step that stopped with this condition now: `retry` reasons
 * always, `hourly` ones once the condition is an hour old.
 */
export function sweepRetries(
  condition: { reason?: string; lastTransitionTime?: string } | undefined,
  now: Date = new Date(),
): boolean {
  const reason = condition?.reason;
  const spec = reason === undefined ? undefined : (conditionReasons as Record<string, ReasonSpec>)[reason];
  if (spec?.sweep === 'retry') return true;
  if (spec?.sweep !== 'hourly') return false;
  const since = Date.parse(condition?.lastTransitionTime ?? '');
  return Number.isNaN(since) || now.getTime() - since >= hourlyRetrySeconds * 1000;
}
