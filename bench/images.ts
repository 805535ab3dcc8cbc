import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { Upload } from 'tus-js-client';
import { digestObject } from '../functions/image-verify/verify-image.js';
import { freeLoopbackPort } from '../local/control-plane/free-port.js';
import { createNamespace } from '../local/control-plane/namespaces.js';
import { projectCrds, startControlPlane } from '../local/control-plane/index.js';
import { startObjectStore } from '../local/object-store/versitygw.js';
import type { BenchModule } from './module.js';

/**
 * The image service's figures, all in one run against the same versitygw: upload throughput of
 * an image through the service (tus, 8 MiB PATCHes = 8 MiB S3 parts) against the store's own
 * multipart PUT throughput (8 MiB parts, one at a time, as the service writes them); the
 * service's peak RSS for two image sizes (it must not grow with the size: bytes stream through
 * 8 MiB part files); and the verify throughput (sha256 + sha512 while reading the object back).
 */
const MiB = 1024 * 1024;
const partBytes = 8 * MiB;
const sizes = [256 * MiB, 1024 * MiB];

/** A stream of `size` bytes, from one random 8 MiB block with its index stamped in (no two parts alike). */
function imageBytes(size: number): Readable {
  const block = Buffer.alloc(partBytes);
  for (let i = 0; i < block.length; i += 4) block.writeUInt32LE((Math.random() * 2 ** 32) >>> 0, i);
  let sent = 0;
  return new Readable({
    read() {
      if (sent >= size) return void this.push(null);
      const length = Math.min(partBytes, size - sent);
      const chunk = Buffer.from(block.subarray(0, length));
      chunk.writeUInt32LE(sent / partBytes, 0);
      sent += length;
      this.push(chunk);
    },
  });
}

const mibPerSecond = (bytes: number, ms: number) => `${(bytes / MiB / (ms / 1000)).toFixed(0)} MiB/s`;
const peakRssMiB = (pid: number) => {
  const match = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match?.[1] ? (Number(match[1]) / 1024).toFixed(0) : '?';
};

async function waitForHealth(url: string, child: ChildProcess) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`image service exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${url}/health/readiness`)).ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error('image service did not become ready');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export const imagesBench: BenchModule = {
  name: 'image service (tus upload, store PUT, verify; versitygw)',
  run: async (print) => {
    const controlPlane = await startControlPlane({ crds: projectCrds().inputs, handleSignals: false });
    const store = await startObjectStore();
    const s3 = new S3Client({
      endpoint: store.endpoint,
      region: store.region,
      forcePathStyle: true,
      credentials: { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey },
    });
    try {
      const namespace = await createNamespace(controlPlane.kubeConfig, 'bench-images');
      const core = controlPlane.kubeConfig.makeApiClient(CoreV1Api);
      const rbac = controlPlane.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
      await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'uploader' } } });
      await rbac.createNamespacedRole({
        namespace,
        body: {
          metadata: { name: 'uploader' },
          rules: [
            {
              apiGroups: ['bpa.akraino.org'],
              resources: ['images'],
              verbs: ['create', 'get', 'update', 'delete'],
            },
          ],
        },
      });
      await rbac.createNamespacedRoleBinding({
        namespace,
        body: {
          metadata: { name: 'uploader' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'uploader' },
          subjects: [{ kind: 'ServiceAccount', name: 'uploader', namespace }],
        },
      });
      const token = (
        await core.createNamespacedServiceAccountToken({
          name: 'uploader',
          namespace,
          body: { spec: { audiences: [] } },
        })
      ).status?.token;
      if (!token) throw new Error('no ServiceAccount token');

      for (const size of sizes) {
        // The store alone: the same bytes, 8 MiB parts, one after the other.
        const storeKey = `bench/direct-${size}`;
        const started = performance.now();
        const { UploadId } = await s3.send(
          new CreateMultipartUploadCommand({ Bucket: store.bucket, Key: storeKey }),
        );
        const parts: { ETag: string; PartNumber: number }[] = [];
        for await (const chunk of imageBytes(size)) {
          const PartNumber = parts.length + 1;
          const { ETag } = await s3.send(
            new UploadPartCommand({
              Bucket: store.bucket,
              Key: storeKey,
              UploadId,
              PartNumber,
              Body: chunk as Buffer,
            }),
          );
          parts.push({ ETag: ETag!, PartNumber });
        }
        await s3.send(
          new CompleteMultipartUploadCommand({
            Bucket: store.bucket,
            Key: storeKey,
            UploadId,
            MultipartUpload: { Parts: parts },
          }),
        );
        const storeMs = performance.now() - started;
        await s3.send(new DeleteObjectCommand({ Bucket: store.bucket, Key: storeKey }));

        // Through the service (a child process, so its RSS is its own).
        const port = await freeLoopbackPort();
        const main = fileURLToPath(new URL('../functions/image-upload/main.js', import.meta.url));
        const child = spawn(process.execPath, [main], {
          env: {
            ...process.env,
            ...store.env(),
            KUBECONFIG: controlPlane.kubeconfigPath,
            HOST: '127.0.0.1',
            PORT: String(port),
            LOG_LEVEL: 'warn',
            IMAGE_PART_BYTES: String(partBytes),
          },
          stdio: ['ignore', 'ignore', 'inherit'],
        });
        const url = `http://127.0.0.1:${port}`;
        try {
          await waitForHealth(url, child);
          const idleRss = peakRssMiB(child.pid!);
          const name = `bench-${size / MiB}mib.img`;
          const uploadStarted = performance.now();
          await new Promise<void>((resolve, reject) => {
            const upload = new Upload(imageBytes(size), {
              endpoint: `${url}/files`,
              uploadSize: size,
              chunkSize: partBytes,
              headers: { authorization: `Bearer ${token}` },
              metadata: { owner: namespace, cluster: 'bench', type: 'os', name },
              retryDelays: [],
              onError: reject,
              onSuccess: () => resolve(),
            });
            upload.start();
          });
          const uploadMs = performance.now() - uploadStarted;
          const serviceRss = peakRssMiB(child.pid!);
          const verifyStarted = performance.now();
          const digests = await digestObject(s3, store.bucket, `operatingsystem/${namespace}/bench/${name}`);
          const verifyMs = performance.now() - verifyStarted;
          if (digests.length !== size) throw new Error(`stored ${digests.length} bytes of ${size}`);
          print(
            `${size / MiB} MiB in ${partBytes / MiB} MiB parts: through the service ${mibPerSecond(size, uploadMs)} ` +
              `(${(uploadMs / 1000).toFixed(1)} s), the store's own multipart PUT ${mibPerSecond(size, storeMs)} ` +
              `(${(storeMs / 1000).toFixed(1)} s), ratio ${(storeMs / uploadMs).toFixed(2)}`,
          );
          print(`  service peak RSS ${serviceRss} MiB (${idleRss} MiB after start)`);
          print(
            `  verify (read back, sha256 + sha512) ${mibPerSecond(size, verifyMs)} (${(verifyMs / 1000).toFixed(1)} s)`,
          );
        } finally {
          child.kill('SIGTERM');
          await new Promise((resolve) => child.once('exit', resolve));
        }
      }
    } finally {
      s3.destroy();
      await store.close();
      await controlPlane.stop();
    }
  },
};
