import type { KubeConfig } from '@kubernetes/client-node';
import type { Condition } from '../../shared/schemas/kube.js';
import type { CustomResource } from '../../shared/k8s/resources.js';
import { silentLogger } from '../../shared/log.js';
import { watchCustomResource, type KubeObject } from '../live-view/resource-watch.js';

export type FollowedObject = KubeObject & {
  metadata?: { name?: string; namespace?: string; generation?: number };
  status?: { conditions?: Condition[] } & Record<string, unknown>;
};

export interface FollowOptions<T> {
  kubeConfig: KubeConfig;
  resource: CustomResource;
  namespace: string;
  name: string;
  /** Called once per condition whose status, reason or message changed. */
  onCondition: (condition: Condition, object: FollowedObject) => void;
  /** Called on every version of the object; a defined result ends the wait with it, a throw fails it. */
  until: (object: FollowedObject) => T | undefined;
  timeoutMs: number;
  /** Describes what was awaited, for the timeout error. */
  what: string;
}

/**
 * Watches one resource, reports each condition change as it happens and resolves when `until`
 * says so; rejects after `timeoutMs` naming what it waited for and the last conditions seen.
 */
export function followConditions<T>(options: FollowOptions<T>): Promise<T> {
  const seen = new Map<string, string>();
  let last: FollowedObject | undefined;
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const finish = (action: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      watch.stop();
      action();
    };
    const consider = (object: FollowedObject) => {
      if (object.metadata?.name !== options.name || object.metadata?.namespace !== options.namespace) return;
      last = object;
      // The summary condition last, so a line never says Ready before the step that made it so.
      const conditions = [...(object.status?.conditions ?? [])].sort(
        (a, b) => Number(a.type === 'Ready') - Number(b.type === 'Ready'),
      );
      for (const condition of conditions) {
        const signature = `${condition.status}|${condition.reason ?? ''}|${condition.message ?? ''}`;
        if (seen.get(condition.type) === signature) continue;
        seen.set(condition.type, signature);
        options.onCondition(condition, object);
      }
      let result: T | undefined;
      try {
        result = options.until(object);
      } catch (error) {
        finish(() => reject(error));
        return;
      }
      if (result !== undefined) finish(() => resolve(result));
    };
    const watch = watchCustomResource({
      kubeConfig: options.kubeConfig,
      resource: options.resource,
      log: silentLogger,
      retryDelayMs: 500,
      onList: (items) => items.forEach((item) => consider(item as FollowedObject)),
      onChange: (type, object) => {
        if (type !== 'DELETED') consider(object as FollowedObject);
      },
    });
    const timer = setTimeout(() => {
      const conditions = (last?.status?.conditions ?? [])
        .map((c) => `${c.type}=${c.status}${c.reason ? ` (${c.reason})` : ''}`)
        .join(', ');
      finish(() =>
        reject(
          new Error(
            `timed out after ${Math.round(options.timeoutMs / 1000)} s waiting for ${options.what}` +
              (last ? `; last conditions: ${conditions || 'none'}` : '; the resource was never seen'),
          ),
        ),
      );
    }, options.timeoutMs);
  });
}
