import type { KubeClients } from '../../shared/k8s/clients.js';
import { listImages } from '../../shared/k8s/image.js';
import { HttpFailure } from './http-failure.js';

export interface QuotaLimits {
  /** Bytes of all the namespace's Images together; 0 = no limit. */
  bytes: number;
  /** Upload requests streaming at once; 0 = no limit. */
  uploads: number;
}

export interface QuotaSettings {
  defaults: QuotaLimits;
  namespaces: Record<string, Partial<QuotaLimits>>;
}

const mib = (bytes: number) =>
  bytes >= 1024 ** 3 ? `${(bytes / 1024 ** 3).toFixed(2)} GiB` : `${(bytes / 1024 ** 2).toFixed(2)} MiB`;

/**
 * Per-namespace quotas of the image service (contract §12). Bytes: the declared lengths of the
 * namespace's Images (unfinished uploads reserve theirs), read from the API server when an upload
 * is created, one creation per namespace at a time so two cannot both fit in the last gap; over
 * it is 413 ImageQuotaExceeded. Concurrent uploads: request bodies streaming into the store at
 * once, counted in this process (there is one upload replica: docs/images.md); over it is 429
 * TooManyUploads with Retry-After.
 */
export class ImageQuotas {
  private readonly streaming = new Map<string, number>();
  private readonly creating = new Map<string, Promise<unknown>>();

  constructor(
    private readonly clients: KubeClients,
    private readonly settings: QuotaSettings,
  ) {}

  limits(namespace: string): QuotaLimits {
    return { ...this.settings.defaults, ...this.settings.namespaces[namespace] };
  }

  /**
   * Runs `create` (the Image's creation) when `length` more bytes fit the namespace's quota;
   * creations in one namespace run one after the other.
   */
  async reserve<T>(
    namespace: string,
    imageName: string,
    length: number,
    create: () => Promise<T>,
  ): Promise<T> {
    const previous = this.creating.get(namespace) ?? Promise.resolve();
    const run = previous
      .catch(() => undefined)
      .then(async () => {
        const { bytes } = this.limits(namespace);
        if (bytes > 0) {
          const used = (await listImages(this.clients, namespace)).reduce(
            (sum, image) => sum + image.spec.length,
            0,
          );
          if (used + length > bytes)
            throw new HttpFailure(
              413,
              'ImageQuotaExceeded',
              `Namespace ${namespace} stores ${used} bytes (${mib(used)}) of Images; its quota is ${bytes} bytes (${mib(bytes)}), so ${imageName} (${length} bytes) does not fit. Delete Images or ask for a larger quota (IMAGE_NAMESPACE_QUOTAS)`,
            );
        }
        return create();
      });
    this.creating.set(namespace, run);
    try {
      return await run;
    } finally {
      if (this.creating.get(namespace) === run) this.creating.delete(namespace);
    }
  }

  /** Takes one streaming-upload slot of the namespace; the returned function gives it back (once). */
  acquireUpload(namespace: string): () => void {
    const { uploads } = this.limits(namespace);
    const current = this.streaming.get(namespace) ?? 0;
    if (uploads > 0 && current >= uploads)
      throw new HttpFailure(
        429,
        'TooManyUploads',
        `Namespace ${namespace} has ${current} uploads streaming; its limit is ${uploads} at once. Retry when one has finished`,
        { 'retry-after': '5' },
      );
    this.streaming.set(namespace, current + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.streaming.get(namespace) ?? 1) - 1;
      if (left <= 0) this.streaming.delete(namespace);
      else this.streaming.set(namespace, left);
    };
  }
}
