import { z } from 'zod';

/** KubeVirt's VirtualMachineInstance (kubevirt.io/v1): a node of `cluster-type: kubevirt-vm`. */
export const virtualMachineInstanceKind = 'VirtualMachineInstance';

/**
 * One entry of a VMI's `status.interfaces[]` as KubeVirt's virt-handler reports it (from the
 * guest agent or the domain): `mac` and `ipAddress` are what the kubevirt-vm path reads.
 */
export const vmiInterfaceSchema = z
  .object({
    name: z.string().optional(),
    interfaceName: z.string().optional(),
    mac: z.string().optional(),
    ipAddress: z.string().optional(),
    ipAddresses: z.array(z.string()).nullish(),
  })
  .loose();
export type VmiInterface = z.infer<typeof vmiInterfaceSchema>;

/** The parts of a VirtualMachineInstance the kubevirt-vm path reads; everything else is dropped. */
export const vmiSchema = z.object({
  kind: z.literal(virtualMachineInstanceKind).optional(),
  metadata: z.object({
    name: z.string().min(1, 'must not be empty'),
    namespace: z.string().optional(),
    /** The precondition of a claim (shared/k8s/host-claims.ts). */
    resourceVersion: z.string().optional(),
    annotations: z.record(z.string(), z.string()).nullish(),
  }),
  status: z
    .object({ phase: z.string().optional(), interfaces: z.array(vmiInterfaceSchema).nullish() })
    .nullish(),
});
export type VirtualMachineInstance = z.infer<typeof vmiSchema>;
