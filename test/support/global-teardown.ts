/** Stops the run's cluster (the node and its pods, then the control plane) and removes its temporary files. */
export default async function globalTeardown(): Promise<void> {
  // The global setup made `./x.js` specifiers resolvable in this (CommonJS) process.
  const { takeCluster } = await import('./control-plane-env.js');
  await takeCluster()?.stop();
}
