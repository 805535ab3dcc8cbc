import { z } from 'zod';

/** inventory-render has no settings of its own beyond the server's (PORT, HOST, ...). */
export const inventoryRenderConfigSchema = z.object({});
export type InventoryRenderConfig = z.infer<typeof inventoryRenderConfigSchema>;
