/** The objects of one Knative kind (`kind` in API group `group`, any version) among parsed manifests. */
export const objectsOfKind = <T>(objects: readonly T[], group: string, kind: string): T[] =>
  objects.filter((object) => {
    const record = object as { apiVersion?: unknown; kind?: unknown } | null;
    return (
      typeof record === 'object' &&
      record !== null &&
      record.kind === kind &&
      typeof record.apiVersion === 'string' &&
      record.apiVersion.startsWith(`${group}/`)
    );
  });
