/**
 * Names of the Provisioning lifecycle (contract section 10): annotations a user sets, the
 * finalizer, the cluster-name claims, and the objects the launcher derives beside the Job.
 */

/** `bpa.akraino.org/retry: <any new value>`: re-run a failed Provisioning for its generation. */
export const retryAnnotation = 'bpa.akraino.org/retry';
/** `bpa.akraino.org/cancel: "true"`: delete a running Job, end in Ready=False, reason Cancelled. */
export const cancelAnnotation = 'bpa.akraino.org/cancel';
/**
 * `bpa.akraino.org/paused` (any value, even empty): no function acts on the Provisioning or
 * Software until it is removed (contract section 14; shared/k8s/paused.ts).
 */
export const pausedAnnotation = 'bpa.akraino.org/paused';
/** Lets the functions clean up (Job, KUD directory, cluster name) before a Provisioning goes. */
export const cleanupFinalizer = 'bpa.akraino.org/cleanup';

/** Hash of everything that decides what the KUD Job does (see launch-hash.ts). */
export const launchHashAnnotation = 'bpa.akraino.org/launch-hash';
/** The retry annotation's value a Job was launched for (a new value asks for a new Job). */
export const launchRetryAnnotation = 'bpa.akraino.org/retry-of';

/** The installer settings ConfigMap, read from the functions' own namespace (contract section 5). */
export const installerSettingsName = 'kud-installer';

/** The new cluster's kubeconfig (Cluster API convention: key `value`). */
export const kubeconfigSecretName = (cluster: string) => `${cluster}-admin-kubeconfig`;
export const kubeconfigSecretKey = 'value';
/**
 * status.kubeconfigSha256: the digest of the admin.conf the functions published into that Secret.
 * The Secret sits in the tenant's namespace; what the functions use of it is checked against this.
 */
export const kubeconfigDigestField = 'kubeconfigSha256';
/**
 * The publisher of that Secret: a short Job in the functions' namespace, on the KUD pod's node,
 * with no API token (docs/adr/0009-kubeconfig-publisher.md): it prints admin.conf to its log as
 * one framed line, which kud-job-launch reads and writes into the Secret.
 */
export const kubeconfigPublisherName = (cluster: string) => `kud-${cluster}-kubeconfig`;
/** The publisher's one framed line: this prefix, then admin.conf in base64. */
export const kubeconfigLogPrefix = 'bpa-kubeconfig/v1 ';
/** Where the publisher sees `/opt/kud/multi-cluster/<cluster>/artifacts` (read-only). */
export const kubeconfigArtifactsMountPath = '/kud-artifacts';

/** The short Job that removes `/opt/kud/multi-cluster/<cluster>` from the node on deletion. */
export const cleanupJobName = (cluster: string) => `kud-${cluster}-cleanup`;
