// Knative's event_display as a subscriber on the real node (test/integration/knative/real-node-eventing.test.ts).
import type { KubernetesObject } from '@kubernetes/client-node';

/**
 * One HTTP server on 8080 as a Deployment and a ClusterIP Service (port 80 -> 8080), as the
 * manifests run their functions: read-only root, non-root, no capabilities, a TCP readiness probe.
 */
export function podServiceObjects(
  namespace: string | undefined,
  name: string,
  image: string,
  command?: string[],
): KubernetesObject[] {
  const labels = { app: name };
  return [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, ...(namespace ? { namespace } : {}) },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            containers: [
              {
                name,
                image,
                imagePullPolicy: 'Never',
                ...(command ? { command } : {}),
                ports: [{ containerPort: 8080 }],
                readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
                securityContext: {
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  runAsNonRoot: true,
                  capabilities: { drop: ['ALL'] },
                },
              },
            ],
          },
        },
      },
    } as KubernetesObject,
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, ...(namespace ? { namespace } : {}) },
      spec: { selector: labels, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
    } as KubernetesObject,
  ];
}

/** Knative's event_display as a subscriber (its image's own entry point). */
export const eventDisplayObjects = (namespace: string, name: string, image: string): KubernetesObject[] =>
  podServiceObjects(namespace, name, image);
