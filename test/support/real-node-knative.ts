// Knative's event_display as a subscriber on the real node (test/integration/knative/real-node-eventing.test.ts).
import type { KubernetesObject } from '@kubernetes/client-node';

/** Knative's event_display as a Deployment and ClusterIP Service (port 80 -> 8080), read-only, non-root. */
export function eventDisplayObjects(namespace: string, name: string, image: string): KubernetesObject[] {
  return [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: name } },
        template: {
          metadata: { labels: { app: name } },
          spec: {
            containers: [
              {
                name: 'display',
                image,
                imagePullPolicy: 'Never',
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
      metadata: { name, namespace },
      spec: { selector: { app: name }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
    } as KubernetesObject,
  ];
}
