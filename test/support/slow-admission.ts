/**
 * A slow validating admission webhook (Jobs by default): the kube-apiserver calls it (HTTPS on
 * loopback, its own CA) on every create of the resource, and it holds the first admission request
 * for each name `holdMs` before allowing it, running `onFirstCreate` meanwhile; later ones for
 * that name are allowed at once. A real cause of a slow API answer (policy engines such as
 * Kyverno or Gatekeeper sit in the same place): a function that creates a Job waits in its
 * request for as long as the create takes, so a delivery can outlive its Trigger's timeout while
 * the function still runs. `onFirstCreate` puts a change of the test's exactly between a
 * function's create and its next request (the kubeconfig Secret, then the status write).
 *
 * Real: kube-apiserver's webhook client (admission.k8s.io/v1 AdmissionReview, TLS checked against
 * the configuration's caBundle). The webhook itself is the test's: it judges nothing.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AdmissionregistrationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import { createCertificateAuthority, issueCertificate } from '../../local/control-plane/pki.js';

/** One admission request the webhook answered. */
export interface AdmittedCreate {
  namespace: string;
  name: string;
  /** The requester as the API server authenticated it (`system:serviceaccount:bpa-system:kud-job-launch`). */
  user: string;
  dryRun: boolean;
  /** Whether the webhook held it (the first create of its name). */
  held: boolean;
  answeredAt: number;
}

export interface SlowAdmission {
  /** Every create the API server asked about, in the order they were answered. */
  readonly admitted: AdmittedCreate[];
  /** Removes the webhook configuration and stops the server. */
  stop(): Promise<void>;
}

const reviewSchema = z.looseObject({
  apiVersion: z.string(),
  request: z.looseObject({
    uid: z.string(),
    namespace: z.string().optional(),
    name: z.string().optional(),
    dryRun: z.boolean().optional(),
    userInfo: z.looseObject({ username: z.string().optional() }).optional(),
    object: z.looseObject({ metadata: z.looseObject({ name: z.string().optional() }).optional() }).optional(),
  }),
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Registers `ValidatingWebhookConfiguration` `name` for CREATE of `resource` (default batch/v1
 * Jobs) in `namespaces` (matched by `kubernetes.io/metadata.name`), served by this process on
 * 127.0.0.1 (the API server runs on this machine). `holdMs` must stay below the webhook's 30 s
 * timeout, with what `onFirstCreate` takes.
 */
export async function startSlowAdmission(
  kubeConfig: KubeConfig,
  options: {
    name: string;
    namespaces: string[];
    holdMs: number;
    resource?: { apiGroup: string; version: string; resource: string };
    onFirstCreate?: (created: { namespace: string; name: string }) => Promise<void>;
  },
): Promise<SlowAdmission> {
  const resource = options.resource ?? { apiGroup: 'batch', version: 'v1', resource: 'jobs' };
  if (options.holdMs >= 29_000) throw new Error('holdMs must stay below the webhook timeout (30 s)');
  const dir = mkdtempSync(join(tmpdir(), 'bpa-slow-admission-'));
  const ca = createCertificateAuthority(dir, 'bpa-test-slow-admission');
  const leaf = issueCertificate(ca, dir, {
    name: 'webhook',
    commonName: '127.0.0.1',
    altNames: ['IP:127.0.0.1'],
    usage: 'server',
  });
  const admitted: AdmittedCreate[] = [];
  const seen = new Set<string>();
  const server: Server = createServer(
    { cert: readFileSync(leaf.certFile), key: readFileSync(leaf.keyFile) },
    (request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        void (async () => {
          const review = reviewSchema.parse(JSON.parse(Buffer.concat(chunks).toString('utf8')));
          const { request: asked } = review;
          const namespace = asked.namespace ?? '';
          const name = asked.name || asked.object?.metadata?.name || '';
          const key = `${namespace}/${name}`;
          const dryRun = asked.dryRun === true;
          // The first real create of a name is the slow one; a dry run never counts.
          const first = !dryRun && !seen.has(key);
          const hold = first ? options.holdMs : 0;
          if (!dryRun) seen.add(key);
          if (hold > 0) await sleep(hold);
          if (first) await options.onFirstCreate?.({ namespace, name });
          admitted.push({
            namespace,
            name,
            user: asked.userInfo?.username ?? '',
            dryRun,
            held: hold > 0,
            answeredAt: Date.now(),
          });
          const body = JSON.stringify({
            apiVersion: review.apiVersion,
            kind: 'AdmissionReview',
            response: { uid: asked.uid, allowed: true },
          });
          response.writeHead(200, { 'content-type': 'application/json' });
          response.end(body);
        })().catch((error: unknown) => {
          response.writeHead(400, { 'content-type': 'text/plain' });
          response.end(String(error));
        });
      });
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const api = kubeConfig.makeApiClient(AdmissionregistrationV1Api);
  await api.createValidatingWebhookConfiguration({
    body: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: options.name },
      webhooks: [
        {
          name: `${options.name}.test.bpa.akraino.org`,
          admissionReviewVersions: ['v1'],
          sideEffects: 'None',
          // Fail: a create the webhook did not see would not be slow, and the test would not
          // test what it says.
          failurePolicy: 'Fail',
          timeoutSeconds: 30,
          clientConfig: {
            url: `https://127.0.0.1:${port}/validate`,
            caBundle: readFileSync(ca.certFile).toString('base64'),
          },
          namespaceSelector: {
            matchExpressions: [
              { key: 'kubernetes.io/metadata.name', operator: 'In', values: options.namespaces },
            ],
          },
          rules: [
            {
              apiGroups: [resource.apiGroup],
              apiVersions: [resource.version],
              operations: ['CREATE'],
              resources: [resource.resource],
              scope: 'Namespaced',
            },
          ],
        },
      ],
    },
  });
  return {
    admitted,
    async stop() {
      await api.deleteValidatingWebhookConfiguration({ name: options.name }).catch(() => undefined);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
