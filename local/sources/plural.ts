/**
 * `meta.UnsafeGuessKindToResource`, which Knative's ApiServerSource uses for the event subject:
 * lower-case the kind; `endpoints` stays as is; `…s` → `…ses`; `…y` → `…ies`; else `+s`.
 * (So `Provisioning` → `provisionings`, `Ingress` → `ingresses`, `Policy` → `policies`.)
 */
export function guessPlural(kind: string): string {
  const singular = kind.toLowerCase();
  if (singular === '' || singular.endsWith('endpoints')) return singular;
  if (singular.endsWith('s')) return `${singular}es`;
  if (singular.endsWith('y')) return `${singular.slice(0, -1)}ies`;
  return `${singular}s`;
}
