import { readFileSync } from 'node:fs';
import type { KubeClients } from '../../shared/k8s/clients.js';
import { bareMetalHostsResource } from '../../shared/k8s/resources.js';

/**
 * The fleet the scale benches provision from: BareMetalHosts as Metal3 leaves them after
 * inspection (about 2 KB each, four NICs, externally provisioned so host-lookup waits for
 * nothing), created with their status; and the guards that stop a run before the machine runs
 * out of memory.
 */
const minAvailableBytes = 4 * 1024 ** 3;
const createConcurrency = 24;

export const mac = (host: number, nic: number) =>
  `52:54:${nic.toString(16).padStart(2, '0')}:${((host >> 16) & 255).toString(16).padStart(2, '0')}:${((host >> 8) & 255).toString(16).padStart(2, '0')}:${(host & 255).toString(16).padStart(2, '0')}`;
const ip = (host: number, nic: number) => `10.${100 + nic}.${(host >> 8) & 255}.${host & 255}`;
export const hostName = (host: number) => `server-${String(host).padStart(5, '0')}`;

/** A BareMetalHost as Metal3 leaves it after inspection: spec, then status (about 2 KB). */
export function bareMetalHost(host: number, namespace: string) {
  const name = hostName(host);
  return {
    spec: {
      apiVersion: 'metal3.io/v1alpha1',
      kind: 'BareMetalHost',
      metadata: { name, namespace, labels: { rack: `r${Math.floor(host / 40)}` } },
      spec: {
        online: true,
        bootMode: 'UEFI',
        bootMACAddress: mac(host, 0),
        bmc: {
          address: `redfish+http://10.99.${(host >> 8) & 255}.${host & 255}:8000/redfish/v1/Systems/1`,
          credentialsName: `${name}-bmc-secret`,
        },
        rootDeviceHints: { deviceName: '/dev/sda' },
      },
    },
    status: {
      errorCount: 0,
      errorMessage: '',
      goodCredentials: { credentials: { name: `${name}-bmc-secret`, namespace }, credentialsVersion: '1234' },
      hardwareProfile: 'unknown',
      lastUpdated: '2026-11-30T10:00:00Z',
      operationalStatus: 'OK',
      poweredOn: true,
      provisioning: {
        ID: `5d1f${String(host).padStart(8, '0')}-7c4e-4f1e-9d8a-1f2e3d4c5b6a`,
        bootMode: 'UEFI',
        image: { url: '' },
        // Provisioned already: host-lookup waits for nothing else (contract section 13).
        state: 'externally provisioned',
      },
      provisioningFailCount: 0,
      hardware: {
        cpu: {
          arch: 'x86_64',
          clockMegahertz: 2600,
          count: 32,
          flags: ['avx2', 'sse4_2', 'vmx'],
          model: 'Intel(R) Xeon(R) Gold 6132 CPU @ 2.60GHz',
        },
        firmware: { bios: { date: '06/28/2023', vendor: 'Dell Inc.', version: '2.19.1' } },
        hostname: name,
        nics: [0, 1, 2, 3].map((nic) => ({
          name: `eno${nic + 1}`,
          mac: mac(host, nic),
          ip: nic < 2 ? ip(host, nic) : '',
          model: '0x8086 0x1572',
          pxe: nic === 0,
          speedGbps: nic < 2 ? 25 : 10,
          vlanId: 0,
        })),
        ramMebibytes: 196608,
        storage: [0, 1].map((disk) => ({
          name: `/dev/sd${'ab'[disk]}`,
          hctl: `0:0:${disk}:0`,
          model: 'PERC H740P Mini',
          rotational: false,
          serialNumber: `6d0946600f${String(host).padStart(6, '0')}${disk}`,
          sizeBytes: 960197124096,
          type: 'SSD',
          vendor: 'DELL',
          wwn: `0x6d0946600f${String(host).padStart(6, '0')}`,
        })),
        systemVendor: { manufacturer: 'Dell Inc.', productName: 'PowerEdge R640', serialNumber: `SN${host}` },
      },
    },
  };
}

export class OutOfMemory extends Error {}
export class Stalled extends Error {}
export const stallMs = 60_000;
export const maxSweeps = 3;

function availableBytes(): number {
  const match = /^MemAvailable:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'));
  return match?.[1] ? Number(match[1]) * 1024 : Number.POSITIVE_INFINITY;
}

export function guardMemory(): void {
  const available = availableBytes();
  if (available < minAvailableBytes)
    throw new OutOfMemory(`MemAvailable ${(available / 1024 ** 3).toFixed(1)} GiB < 4 GiB`);
}

/** Runs `work` over `count` items, `createConcurrency` at a time, checking memory as it goes. */
export async function inParallel(
  count: number,
  work: (i: number) => Promise<void>,
  progress: { done: number },
  concurrency = createConcurrency,
) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        if (i % 100 === 0) guardMemory();
        await work(i);
        progress.done++;
      }
    }),
  );
}

export async function createHosts(
  clients: KubeClients,
  namespace: string,
  count: number,
  progress: { done: number },
) {
  const target = { ...bareMetalHostsResource, namespace };
  await inParallel(
    count,
    async (host) => {
      const { spec, status } = bareMetalHost(host, namespace);
      const created = (await clients.custom.createNamespacedCustomObject({
        ...target,
        body: spec,
      })) as object;
      await clients.custom.replaceNamespacedCustomObjectStatus({
        ...target,
        name: spec.metadata.name,
        body: { ...created, status },
      });
    },
    progress,
  );
}
