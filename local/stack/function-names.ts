/** The four functions of the chain, by Knative Service name (= folder under functions/). */
export const functionNames = [
  'host-lookup',
  'inventory-render',
  'kud-job-launch',
  'software-install',
] as const;
export type FunctionName = (typeof functionNames)[number];

export const isFunctionName = (name: string): name is FunctionName =>
  (functionNames as readonly string[]).includes(name);
