import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { BpaError } from '../../shared/errors.js';
import { freeLoopbackPort } from '../control-plane/free-port.js';
import { startManagedProcess, type ManagedProcess } from '../control-plane/managed-process.js';
import { isExecutable, pinnedVersion } from '../control-plane/assets.js';
import { repoRoot } from '../control-plane/repo-root.js';

/** versitygw's pinned version (engines/versions.env). */
export function versitygwVersion(root = repoRoot()): string {
  return pinnedVersion('VERSITYGW_VERSION', root);
}

/**
 * The versitygw binary: TEST_ASSET_VERSITYGW, else the per-version cache, else a build
 * (`engines/build.sh s3`, minutes the first time; progress on stderr).
 */
export function locateVersitygw(env: NodeJS.ProcessEnv = process.env, root = repoRoot()): string {
  const override = env.TEST_ASSET_VERSITYGW;
  if (override) {
    if (!isExecutable(override))
      throw new BpaError(
        'VersitygwMissing',
        `TEST_ASSET_VERSITYGW=${override} is not an executable file`,
        'internal',
      );
    return override;
  }
  const cached = join(
    env.XDG_CACHE_HOME || join(homedir(), '.cache'),
    'bpa-functions',
    `versitygw-${versitygwVersion(root)}`,
    'versitygw',
  );
  if (isExecutable(cached)) return cached;
  const dir = execFileSync('bash', [join(root, 'engines', 'build.sh'), 's3'], {
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  })
    .trim()
    .split('\n')
    .pop()!;
  return join(dir, 'versitygw');
}

export interface RunningObjectStore {
  /** http://127.0.0.1:<port> */
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** The bucket created at start. */
  bucket: string;
  dataDir: string;
  process: ManagedProcess;
  /** The S3 settings of the image service and image-verify (shared/storage/s3.ts) for this store. */
  env(): Record<string, string>;
  /** Stops the server and removes its data directory (unless it was given). */
  close(): Promise<void>;
}

export interface StartObjectStoreOptions {
  /** Where the objects live; default a fresh temporary directory, removed on close. */
  dataDir?: string;
  bucket?: string;
  port?: number;
}

/**
 * A real S3 server: versitygw's posix backend on 127.0.0.1, one root account with random keys,
 * one bucket. Object metadata goes to a sidecar directory (`--sidecar`) rather than user xattrs,
 * which tmpfs on older kernels and some overlay file systems refuse.
 */
export async function startObjectStore(options: StartObjectStoreOptions = {}): Promise<RunningObjectStore> {
  const binary = locateVersitygw();
  const owned = options.dataDir === undefined;
  const base = options.dataDir ?? mkdtempSync(join(tmpdir(), 'bpa-s3-'));
  const dataDir = join(base, 'data');
  const sidecarDir = join(base, 'sidecar');
  mkdirSync(dataDir, { recursive: true });
  const port = options.port ?? (await freeLoopbackPort());
  const accessKeyId = `bpa${randomBytes(6).toString('hex')}`;
  const secretAccessKey = randomBytes(24).toString('base64url');
  const urlKeys = `local:${randomBytes(32).toString('base64url')}`;
  const region = 'us-east-1';
  const bucket = options.bucket ?? 'bpa-images';
  mkdirSync(sidecarDir, { recursive: true });
  const posixArgs = ['--sidecar', sidecarDir, dataDir];
  const args = [
    '--access',
    accessKeyId,
    '--secret',
    secretAccessKey,
    '--region',
    region,
    '--port',
    `127.0.0.1:${port}`,
    'posix',
    ...posixArgs,
  ];
  const child = startManagedProcess('versitygw', binary, args, join(base, 'versitygw.log'));
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({
    endpoint,
    region,
    forcePathStyle: true,
    credentials: { accessKeyId, secretAccessKey },
  });
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exit()) throw new Error(`versitygw exited at start: ${child.logTail(20)}`);
    try {
      await client.send(new CreateBucketCommand({ Bucket: bucket }));
      break;
    } catch (error) {
      const name = (error as { name?: string }).name;
      if (name === 'BucketAlreadyOwnedByYou' || name === 'BucketAlreadyExists') break;
      if (Date.now() > deadline) {
        await child.stop();
        throw new Error(`versitygw did not answer on ${endpoint}: ${String(error)}\n${child.logTail(20)}`, {
          cause: error,
        });
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  client.destroy();
  return {
    endpoint,
    region,
    accessKeyId,
    secretAccessKey,
    bucket,
    dataDir,
    process: child,
    env: () => ({
      S3_ENDPOINT: endpoint,
      S3_REGION: region,
      S3_BUCKET: bucket,
      S3_FORCE_PATH_STYLE: 'true',
      AWS_ACCESS_KEY_ID: accessKeyId,
      AWS_SECRET_ACCESS_KEY: secretAccessKey,
      // The download URLs' signing key of this store's image service (in a cluster: Secret bpa-image-url-keys).
      IMAGE_URL_KEYS: urlKeys,
    }),
    close: async () => {
      await child.stop();
      if (owned) rmSync(base, { recursive: true, force: true });
    },
  };
}
