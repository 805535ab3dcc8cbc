/** Stops the run's control plane (both processes) and removes its temporary files. */
export default async function globalTeardown(): Promise<void> {
  // The global setup made `./x.js` specifiers resolvable in this (CommonJS) process.
  const { takeControlPlane } = await import('./control-plane-env.js');
  await takeControlPlane()?.stop();
}
