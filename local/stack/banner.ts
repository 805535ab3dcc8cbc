import type { Stack } from './index.js';

/** The start-up summary: where everything listens and where to look. */
export function stackBanner(stack: Stack): string {
  const rows: [string, string][] = [
    ['broker', stack.ingressUrl],
    ...stack.functions.map((f): [string, string] => [f.name, f.url]),
    ['live view', stack.liveViewUrl],
    ['kubeconfig', `${stack.kubeconfigPath}${stack.api.embedded ? ' (embedded control plane)' : ''}`],
    ['logs', `${stack.logFilePath} (JSON logs of functions, broker, sources)`],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  return rows.map(([label, value]) => `  ${label.padEnd(width)}  ${value}`).join('\n') + '\n';
}
