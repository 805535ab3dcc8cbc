import { z } from 'zod';

/** A normalised MAC address: lower case, `:` separated. */
export const normalisedMacSchema = z
  .string()
  .regex(/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/, 'a normalised MAC address');

export const nodeRoleSchema = z.enum(['master', 'worker']);
export type NodeRole = z.infer<typeof nodeRoleSchema>;

/** Where a node's IP address came from. */
export const ipSourceSchema = z.enum(['dhcp-leases', 'host-nics', 'virtlet-pod', 'kubevirt-vmi']);
export type IpSource = z.infer<typeof ipSourceSchema>;

/**
 * One node of a cluster after resolution: the unit of status.nodes, of the chain's events
 * and of `bpa render --output json`. A master that is also a worker has both roles.
 */
export const resolvedNodeSchema = z.object({
  label: z.string().min(1),
  roles: z.array(nodeRoleSchema).min(1),
  mac: normalisedMacSchema,
  ip: z.string().min(1),
  source: ipSourceSchema,
});
export type ResolvedNode = z.infer<typeof resolvedNodeSchema>;

export const clusterTypeSchema = z.enum(['baremetal', 'virtlet-vm', 'kubevirt-vm']);
export type ClusterType = z.infer<typeof clusterTypeSchema>;
