import { createHash } from 'node:crypto';

/**
 * The ServiceAccount Knative makes as a Trigger's OIDC identity: knative/eventing's
 * auth.GetOIDCServiceAccountNameForResource, i.e. knative.dev/pkg kmeta.ChildName(name,
 * "-oidc-eventing.knative.dev-Trigger"), lower-cased. The suffix is longer than the 31 characters
 * ChildName keeps beside a hash, so a name that does not fit in 63 becomes its first 31
 * characters and the md5 of name and suffix. The chain suite checks these against the Triggers'
 * status.auth on the real engine.
 */
export function triggerOidcServiceAccount(trigger: string): string {
  const suffix = '-oidc-eventing.knative.dev-Trigger';
  if (trigger.length <= 63 - suffix.length) return `${trigger}${suffix}`.toLowerCase();
  const hash = createHash('md5')
    .update(trigger + suffix)
    .digest('hex');
  let name = trigger.slice(0, 31) + hash;
  if (name.length < 63) name += suffix.slice(0, 63 - name.length);
  return name.replace(/[^a-zA-Z0-9]+$/, '').toLowerCase();
}
