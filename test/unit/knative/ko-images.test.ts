import { describe, expect, it } from '@jest/globals';
import type { KubernetesObject } from '@kubernetes/client-node';
import { releasedImageName, resolveKoImages } from '../../../local/knative/ko-images.js';

const controllerImage = 'localhost/bpa-functions/knative-eventing-controller@sha256:aa';
const adapterImage = 'localhost/bpa-functions/knative-eventing-apiserver-receive-adapter@sha256:bb';
const images = {
  'ko://knative.dev/eventing/cmd/controller': controllerImage,
  'ko://knative.dev/eventing/cmd/apiserver_receive_adapter': adapterImage,
};
const deployment = (image: string, env: { name: string; value: string }[] = []): KubernetesObject =>
  ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'eventing-controller', namespace: 'knative-eventing' },
    spec: { template: { spec: { containers: [{ name: 'controller', image, env }] } } },
  }) as KubernetesObject;
const containerOf = (o: KubernetesObject) =>
  (o as unknown as { spec: { template: { spec: { containers: Record<string, unknown>[] } } } }).spec.template
    .spec.containers[0]!;

describe('resolveKoImages', () => {
  it('resolves images and env values, sets a pull policy that never pulls, and leaves the input alone', () => {
    const input = deployment('ko://knative.dev/eventing/cmd/controller', [
      { name: 'APISERVER_RA_IMAGE', value: 'ko://knative.dev/eventing/cmd/apiserver_receive_adapter' },
      { name: 'AUTH_PROXY_IMAGE', value: 'ko://knative.dev/eventing/cmd/auth_proxy' },
      { name: 'SYSTEM_NAMESPACE', value: 'knative-eventing' },
    ]);
    const { objects, unresolved } = resolveKoImages([input], images);
    const container = containerOf(objects[0]!);
    expect(container.image).toBe(controllerImage);
    expect(container.imagePullPolicy).toBe('Never');
    expect(container.env).toEqual([
      { name: 'APISERVER_RA_IMAGE', value: adapterImage },
      { name: 'AUTH_PROXY_IMAGE', value: 'ko://knative.dev/eventing/cmd/auth_proxy' },
      { name: 'SYSTEM_NAMESPACE', value: 'knative-eventing' },
    ]);
    expect(unresolved).toEqual(['ko://knative.dev/eventing/cmd/auth_proxy']);
    expect(containerOf(input).image).toBe('ko://knative.dev/eventing/cmd/controller');
  });

  it('refuses a container image with no built image, naming the object', () => {
    expect(() => resolveKoImages([deployment('ko://knative.dev/eventing/cmd/heartbeats')], images)).toThrow(
      /Deployment knative-eventing\/eventing-controller.*ko:\/\/knative.dev\/eventing\/cmd\/heartbeats/,
    );
  });

  it("resolves Knative's released names too, and nothing that merely resembles a key", () => {
    const released = releasedImageName('ko://knative.dev/eventing/cmd/controller');
    expect(released).toBe('gcr.io/knative-releases/knative.dev/eventing/cmd/controller');
    const { objects } = resolveKoImages([deployment(released), deployment('toString')], {
      [released]: controllerImage,
    });
    expect(containerOf(objects[0]!).image).toBe(controllerImage);
    expect(containerOf(objects[1]!)).toEqual({ name: 'controller', image: 'toString', env: [] });
  });
});
