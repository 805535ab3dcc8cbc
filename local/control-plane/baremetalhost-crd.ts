import type { KubernetesObject } from '@kubernetes/client-node';

/**
 * A minimal structural `metal3.io/v1alpha1` BareMetalHost CRD, written by this project, for
 * when Metal3's own CRD is not at hand (METAL3_CRDS_DIR unset). It types only what BPA reads
 * (spec.bootMACAddress, status.hardware.nics[].mac/ip/name, status.provisioning.state and
 * Metal3's error fields) and keeps every other field.
 * Wire format, like a YAML file.
 */
export const minimalBareMetalHostCrd: KubernetesObject & { spec: object } = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'baremetalhosts.metal3.io' },
  spec: {
    group: 'metal3.io',
    scope: 'Namespaced',
    names: {
      kind: 'BareMetalHost',
      listKind: 'BareMetalHostList',
      plural: 'baremetalhosts',
      singular: 'baremetalhost',
      shortNames: ['bmh', 'bmhost'],
    },
    versions: [
      {
        name: 'v1alpha1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              apiVersion: { type: 'string' },
              kind: { type: 'string' },
              metadata: { type: 'object' },
              spec: {
                type: 'object',
                'x-kubernetes-preserve-unknown-fields': true,
                properties: {
                  bootMACAddress: { type: 'string' },
                  online: { type: 'boolean' },
                },
              },
              status: {
                type: 'object',
                'x-kubernetes-preserve-unknown-fields': true,
                properties: {
                  operationalStatus: { type: 'string' },
                  errorType: { type: 'string' },
                  errorMessage: { type: 'string' },
                  provisioning: {
                    type: 'object',
                    'x-kubernetes-preserve-unknown-fields': true,
                    properties: { state: { type: 'string' } },
                  },
                  hardware: {
                    type: 'object',
                    'x-kubernetes-preserve-unknown-fields': true,
                    properties: {
                      nics: {
                        type: 'array',
                        items: {
                          type: 'object',
                          'x-kubernetes-preserve-unknown-fields': true,
                          properties: {
                            name: { type: 'string' },
                            mac: { type: 'string' },
                            ip: { type: 'string' },
                          },
                        },
                      },
                    },
                  },
                },
              },
            },
          },
        },
      },
    ],
  },
};
