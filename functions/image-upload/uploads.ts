import { chainEvent } from '../../shared/cloudevents/chain-event.js';
import { postEventWithRetry } from '../../shared/cloudevents/sink-client.js';
import { imageObjectKey, imageObjectName } from '../../shared/core/image-names.js';
import { describeError } from '../../shared/errors.js';
import { HttpFailure } from './http-failure.js';
import { EventTypes, imageSubject } from '../../shared/events/types.js';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { setCondition, type ConditionUpdate } from '../../shared/k8s/conditions.js';
import { recordEvent } from '../../shared/k8s/events.js';
import {
  createImage,
  deleteImage,
  ImageCondition,
  imageIdentity,
  imageRef,
  readImage,
  updateImageStatus,
  type StoredImage,
} from '../../shared/k8s/image.js';
import { managedByLabel, managedByValue } from '../../shared/k8s/resources.js';
import { fieldManagerFor } from '../../shared/k8s/status-apply.js';
import type { Logger } from '../../shared/log.js';
import type { Sink } from '../../shared/server/sink.js';
import type { ImageSpec, ImageStatus, ImageType } from '../../shared/schemas/image.js';
import type { ImageQuotas } from './quotas.js';
import type { ImageStore } from './store.js';

export const functionName = 'image-upload';
/** The field manager of image-upload's status applies (Uploaded, the upload's fields). */
const manager = fieldManagerFor(functionName);

type ConditionText = Pick<ConditionUpdate, 'status' | 'reason' | 'message'>;

/** Where one image lives: the Image object and the object key of its bytes. */
export interface ImageAddress {
  namespace: string;
  name: string;
  key: string;
  type: ImageType;
  clusterName: string;
  imageName: string;
}

export const addressOf = (
  type: ImageType,
  owner: string,
  clusterName: string,
  imageName: string,
): ImageAddress => ({
  namespace: owner,
  name: imageObjectName(clusterName, type, imageName),
  key: imageObjectKey(type, owner, clusterName, imageName),
  type,
  clusterName,
  imageName,
});

/**
 * The Image side of an upload, shared by the tus routes and the original's routes: the Image
 * is created with the upload, marked Uploaded when the last byte is stored (then image.uploaded
 * goes to the sink), and deleted with the upload's objects.
 */
export class ImageUploads {
  constructor(
    readonly clients: KubeClients,
    private readonly store: ImageStore,
    private readonly bucket: string,
    private readonly sink: Sink,
    private readonly log: Logger,
    private readonly quotas?: ImageQuotas,
  ) {}

  /** The Image at an address, only if it is the one the address names (see image-names.ts). */
  async find(address: ImageAddress): Promise<StoredImage | undefined> {
    const image = await readImage(this.clients, address.namespace, address.name);
    if (!image) return undefined;
    const { spec } = image;
    const same =
      spec.type === address.type &&
      spec.clusterName === address.clusterName &&
      spec.imageName === address.imageName;
    return same ? image : undefined;
  }

  /**
   * The status of an upload phase: offset, length and where the bytes go, with Uploaded and Ready
   * written in the one update so a reader never sees them disagree.
   */
  private phaseStatus(
    fresh: StoredImage,
    address: ImageAddress,
    upload: { phase: 'Uploading' | 'Uploaded'; offset: number; length: number },
    [uploaded, ready]: [ConditionText, ConditionText],
  ): ImageStatus {
    const observedGeneration = fresh.metadata.generation;
    return {
      ...fresh.status,
      phase: upload.phase,
      uploadOffset: upload.offset,
      uploadLength: upload.length,
      storage: { bucket: this.bucket, key: address.key },
      conditions: setCondition(
        setCondition(fresh.status?.conditions, {
          type: ImageCondition.uploaded,
          ...uploaded,
          observedGeneration,
        }),
        { type: ImageCondition.ready, ...ready, observedGeneration },
      ),
    };
  }

  /** Creates the Image of a new upload (409 when it exists) and records where its bytes go. */
  async begin(address: ImageAddress, spec: ImageSpec): Promise<StoredImage> {
    const create = () =>
      createImage(this.clients, address.namespace, address.name, spec, {
        [managedByLabel]: managedByValue,
        'bpa.akraino.org/cluster': address.clusterName,
        'bpa.akraino.org/image-type': address.type,
      });
    // The namespace's byte quota is checked with the creation, so a refused upload stores nothing.
    const created = this.quotas
      ? await this.quotas.reserve(address.namespace, address.imageName, spec.length, create)
      : await create();
    if (created === 'exists')
      throw new HttpFailure(
        409,
        'ImageExists',
        `Image ${address.namespace}/${address.name} (${address.type} image ${address.imageName} of cluster ${address.clusterName}) already exists; DELETE it first`,
      );
    const updated = await updateImageStatus(this.clients, manager, address.namespace, address.name, (fresh) =>
      this.phaseStatus(fresh, address, { phase: 'Uploading', offset: 0, length: spec.length }, [
        { status: 'False', reason: 'Uploading', message: `Waiting for ${spec.length} bytes` },
        { status: 'False', reason: 'Uploading', message: 'The upload has not finished' },
      ]),
    );
    this.log.info('upload created', {
      namespace: address.namespace,
      name: address.name,
      key: address.key,
      length: spec.length,
    });
    return updated ?? created;
  }

  /**
   * A PATCH ended (completed or broken): status.uploadOffset follows the stored offset, so a
   * watcher sees the upload advance and where a resumed upload will start. Only while the Image
   * is Uploading and only forwards: the finish (finished()) and a newer PATCH win.
   */
  async progressed(address: ImageAddress): Promise<void> {
    let offset: number;
    try {
      offset = (await this.store.getUpload(address.key)).offset;
    } catch {
      return; // terminated or never created: nothing to record
    }
    try {
      await updateImageStatus(this.clients, manager, address.namespace, address.name, (fresh) =>
        fresh.status?.phase !== 'Uploading' || (fresh.status.uploadOffset ?? 0) >= offset
          ? undefined
          : { ...fresh.status, uploadOffset: offset },
      );
    } catch (error) {
      // Progress is informative: the upload itself is unaffected.
      this.log.warn('upload progress not recorded', {
        namespace: address.namespace,
        name: address.name,
        offset,
        ...describeError(error),
      });
    }
  }

  /** The last byte is stored: status Uploaded, an Event, and image.uploaded to the sink. */
  async finished(address: ImageAddress, length: number): Promise<void> {
    const image = await updateImageStatus(this.clients, manager, address.namespace, address.name, (fresh) =>
      this.phaseStatus(fresh, address, { phase: 'Uploaded', offset: length, length }, [
        {
          status: 'True',
          reason: 'Uploaded',
          message: `${length} bytes stored at ${this.bucket}/${address.key}`,
        },
        {
          status: 'Unknown',
          reason: 'Verifying',
          message: 'Waiting for image-verify to check the stored bytes',
        },
      ]),
    );
    const log = this.log.child({ namespace: address.namespace, name: address.name });
    if (!image) {
      log.warn('upload finished but its Image is gone; nothing to verify');
      return;
    }
    log.info('upload finished', { key: address.key, length });
    await recordEvent(
      this.clients,
      {
        object: imageIdentity(image),
        type: 'Normal',
        reason: 'Uploaded',
        message: `${length} bytes stored at ${this.bucket}/${address.key}`,
        component: functionName,
      },
      log,
    );
    if (!this.sink.url) {
      log.warn('no K_SINK or BROKER_URL: image.uploaded not sent, the image stays Uploaded');
      return;
    }
    const event = chainEvent(
      EventTypes.imageUploaded,
      functionName,
      imageSubject(address.namespace, address.name),
      { image: imageRef(image), cluster: address.clusterName, type: address.type, length },
      { cluster: address.clusterName },
    );
    try {
      const response = await postEventWithRetry(this.sink.url, event, {
        ...(this.sink.tokenFile ? { tokenFile: this.sink.tokenFile } : {}),
      });
      if (response.status >= 300) throw new Error(`the sink answered HTTP ${response.status}`);
      log.info('event sent', { eventId: event.id, eventType: event.type });
    } catch (error) {
      // The bytes are safe and the client is told so; the Image stays Uploaded for an operator to see.
      log.error('image.uploaded could not be delivered', { eventId: event.id, ...describeError(error) });
    }
  }

  /** Removes the upload's objects and its Image; false when neither existed. */
  async terminate(address: ImageAddress): Promise<boolean> {
    const image = await this.find(address);
    const hadObjects = await this.store.removeAll(address.key);
    const hadImage = image ? await deleteImage(this.clients, address.namespace, address.name) : false;
    this.log.info('image removed', {
      namespace: address.namespace,
      name: address.name,
      key: address.key,
      hadObjects,
      hadImage,
    });
    return hadObjects || hadImage;
  }
}
