import { counterSpec } from '../../shared/telemetry/metrics.js';

export const inventoriesRendered = counterSpec({
  name: 'bpa_inventories_rendered_total',
  help: 'Inventories (hosts.ini) rendered and stored in their ConfigMap',
  labelNames: [],
});

export const inventoryRenderMetrics = [inventoriesRendered];
