/**
 * Hostile CloudEvents for one function: broken envelopes (binary and structured), types it does
 * not accept, oversized bodies, and each accepted type's data damaged field by field.
 */
import fc from 'fast-check';
import { EventTypes, SourceEventTypes } from '../../../shared/events/types.js';
import { damage, hostileString, type Damaged, type Path } from './hostile.js';
import { headerSafe } from './raw-http.js';

export interface HostileRequest {
  /** What was done to the event, for counts and failure messages. */
  kind: string;
  headers: Record<string, string>;
  body: string | Buffer;
  /** True: must be refused with 400. False: well-formed but hostile values; any non-5xx clear answer. */
  malformed: boolean;
}

const ref = { namespace: 'resilience-nowhere', name: 'p', uid: 'uid-1', generation: 1 };
const node = {
  label: 'master-1',
  roles: ['master'],
  mac: 'aa:bb:cc:dd:ee:01',
  ip: '10.0.0.1',
  source: 'dhcp-leases',
};
const refFields = [
  { path: ['provisioning'], type: 'object' },
  { path: ['provisioning', 'namespace'], type: 'string' },
  { path: ['provisioning', 'name'], type: 'string' },
  { path: ['provisioning', 'uid'], type: 'string' },
  { path: ['provisioning', 'generation'], type: 'number' },
  { path: ['cluster'], type: 'string' },
] as const;
const nodeFields = [
  { path: ['nodes'], type: 'array' },
  { path: ['nodes', 0, 'label'], type: 'string' },
  { path: ['nodes', 0, 'roles'], type: 'array' },
  { path: ['nodes', 0, 'mac'], type: 'string' },
  { path: ['nodes', 0, 'ip'], type: 'string' },
  { path: ['nodes', 0, 'source'], type: 'string' },
] as const;
const refText: Path[] = [['provisioning', 'namespace'], ['provisioning', 'name'], ['cluster']];
const nodeText: Path[] = [
  ['nodes', 0, 'label'],
  ['nodes', 0, 'mac'],
  ['nodes', 0, 'ip'],
];

function kubeObject(kind: string, apiVersion: string) {
  return {
    valid: {
      apiVersion,
      kind,
      metadata: {
        name: 'edge',
        namespace: 'resilience-nowhere',
        uid: 'uid-1',
        generation: 1,
        resourceVersion: '1',
        labels: { cluster: 'edge-1' },
      },
      spec: { masters: [{ 'master-1': { 'mac-address': 'aa:bb:cc:dd:ee:01' } }] },
    },
    fields: {
      required: [
        { path: ['apiVersion'], type: 'string' },
        { path: ['kind'], type: 'string' },
        { path: ['metadata'], type: 'object' },
        { path: ['metadata', 'name'], type: 'string' },
        { path: ['metadata', 'namespace'], type: 'string', optional: true },
        { path: ['metadata', 'labels'], type: 'object', optional: true },
        { path: ['metadata', 'labels', 'cluster'], type: 'string', optional: true },
        { path: ['metadata', 'generation'], type: 'number', optional: true },
      ],
      text: [
        ['metadata', 'name'],
        ['metadata', 'namespace'],
        ['metadata', 'labels', 'cluster'],
        ['kind'],
        ['spec', 'masters', 0, 'master-1', 'mac-address'],
      ],
    },
  } as const;
}

/** A valid data sample per accepted type and which of its fields to damage. */
const samples: Record<string, { valid: unknown; fields: Parameters<typeof damage>[1] }> = {
  [EventTypes.hostsResolved]: {
    valid: { provisioning: ref, cluster: 'edge-1', clusterType: 'baremetal', nodes: [node] },
    fields: {
      required: [...refFields, ...nodeFields, { path: ['clusterType'], type: 'string' }],
      text: [...refText, ...nodeText],
    },
  },
  [EventTypes.inventoryRendered]: {
    valid: {
      provisioning: ref,
      cluster: 'edge-1',
      clusterType: 'baremetal',
      configMap: 'edge-1-inventory',
      inventorySha256: 'a'.repeat(64),
    },
    fields: {
      required: [
        ...refFields,
        { path: ['configMap'], type: 'string' },
        { path: ['inventorySha256'], type: 'string' },
      ],
      text: [...refText, ['configMap'], ['inventorySha256']],
    },
  },
  [EventTypes.clusterReady]: {
    valid: { provisioning: ref, cluster: 'edge-1', configMap: 'edge-1-configmap', nodes: [node] },
    fields: {
      required: [...refFields, { path: ['configMap'], type: 'string' }, ...nodeFields],
      text: [...refText, ...nodeText],
    },
  },
};

function sampleFor(functionName: string, type: string) {
  if (samples[type]) return samples[type];
  if (type === SourceEventTypes.resourceAdd || type === SourceEventTypes.resourceUpdate) {
    if (functionName === 'kud-job-launch') return kubeObject('Job', 'batch/v1');
    if (functionName === 'software-install') return kubeObject('Software', 'bpa.akraino.org/v1alpha1');
    return kubeObject('Provisioning', 'bpa.akraino.org/v1alpha1');
  }
  return undefined; // ping: any data is accepted by design (the sweep ignores it)
}

let sequence = 0;
const baseHeaders = (type: string) => ({
  'ce-specversion': '1.0',
  'ce-id': `hostile-${++sequence}`,
  'ce-source': '/resilience/bad-input',
  'ce-type': type,
  'ce-subject': 'namespaces/resilience-nowhere/provisionings/p',
  'content-type': 'application/json',
});

function binary(type: string, data: unknown, kind: string, malformed: boolean): HostileRequest {
  return { kind, headers: baseHeaders(type), body: JSON.stringify(data), malformed };
}

/** Every way this function's input can be broken. */
export function hostileEvents(
  functionName: string,
  accepts: readonly string[],
): fc.Arbitrary<HostileRequest> {
  const acceptedType = fc.constantFrom(...accepts);
  const hostileAscii = hostileString.map(headerSafe).filter((s) => s.length > 0 && s.length < 4000);

  const missingAttribute = fc
    .tuple(acceptedType, fc.constantFrom('ce-id', 'ce-source', 'ce-type', 'ce-specversion'))
    .map(([type, header]): HostileRequest => {
      const headers: Record<string, string> = baseHeaders(type);
      delete headers[header];
      return { kind: `binary without ${header}`, headers, body: '{}', malformed: true };
    });
  const badSpecversion = fc
    .tuple(acceptedType, fc.oneof(fc.constantFrom('0.3', '2.0', '1', '1.0.0', ' '), hostileAscii))
    .filter(([, version]) => version.trim() !== '1.0')
    .map(([type, version]): HostileRequest => ({
      kind: 'bad specversion',
      headers: { ...baseHeaders(type), 'ce-specversion': version },
      body: '{}',
      malformed: true,
    }));
  const notJsonData = fc.tuple(acceptedType, hostileString).map(([type, text]): HostileRequest => ({
    kind: 'binary data not JSON',
    headers: baseHeaders(type),
    body: `{${text}`,
    malformed: true,
  }));
  const structuredGarbage = fc
    .oneof(
      hostileString.map((s) => `{"specversion":${s}`),
      fc.constantFrom('[]', 'null', '"event"', '42', '{}', '{"specversion":"1.0"}'),
      fc.tuple(acceptedType, fc.constantFrom('id', 'source', 'type', 'specversion')).map(([type, drop]) => {
        const event: Record<string, unknown> = { specversion: '1.0', id: 'x', source: '/s', type, data: {} };
        delete event[drop];
        return JSON.stringify(event);
      }),
      fc
        .tuple(
          acceptedType,
          fc.constantFrom('id', 'source', 'type', 'specversion'),
          fc.oneof(fc.integer(), fc.constant(null), fc.constant([])),
        )
        .map(([type, field, value]) =>
          JSON.stringify({ specversion: '1.0', id: 'x', source: '/s', type, data: {}, [field]: value }),
        ),
    )
    .map((body): HostileRequest => ({
      kind: 'structured envelope broken',
      headers: { 'content-type': 'application/cloudevents+json' },
      body,
      malformed: true,
    }));
  const unacceptedType = fc
    .oneof(hostileAscii, fc.constantFrom(...Object.values(EventTypes), SourceEventTypes.resourceDelete))
    .filter((type) => !accepts.includes(type))
    .map((type): HostileRequest => ({ ...binary(type, {}, 'unaccepted type', true) }));
  const oversized = acceptedType.map((type): HostileRequest => ({
    kind: 'body over 1 MiB',
    headers: baseHeaders(type),
    body: Buffer.alloc(1024 * 1024 + 17, 0x61),
    malformed: true,
  }));
  const structuredHostileData = fc
    .tuple(
      acceptedType.filter((type) => type !== SourceEventTypes.ping),
      hostileString,
    )
    .map(([type, text]): HostileRequest => ({
      kind: 'structured data hostile string',
      headers: { 'content-type': 'application/cloudevents+json' },
      body: JSON.stringify({
        specversion: '1.0',
        id: `s-${++sequence}`,
        source: '/s',
        type,
        datacontenttype: 'application/json',
        data: text,
      }),
      // A bare string is no object (the ping, whose data is free-form, is left out above: it runs a sweep).
      malformed: true,
    }));

  const damagedData = accepts
    .map((type) => [type, sampleFor(functionName, type)] as const)
    .filter(
      (entry): entry is readonly [string, NonNullable<ReturnType<typeof sampleFor>>] =>
        entry[1] !== undefined,
    )
    .map(([type, sample]) =>
      damage(sample.valid, sample.fields).map((damaged: Damaged): HostileRequest =>
        binary(
          type,
          damaged.value,
          `${type} data: ${damaged.how.replace(/\.\d+\./g, '.')}`,
          damaged.malformed,
        ),
      ),
    );

  return fc.oneof(
    { arbitrary: missingAttribute, weight: 2 },
    { arbitrary: badSpecversion, weight: 2 },
    { arbitrary: notJsonData, weight: 2 },
    { arbitrary: structuredGarbage, weight: 3 },
    { arbitrary: unacceptedType, weight: 2 },
    { arbitrary: oversized, weight: 1 },
    { arbitrary: structuredHostileData, weight: 1 },
    ...damagedData.map((arbitrary) => ({ arbitrary, weight: Math.ceil(12 / damagedData.length) })),
  );
}
