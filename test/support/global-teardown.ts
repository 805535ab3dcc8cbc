// PLACEHOLDER: the control-plane work replaces this with a clean stop.
export default async function globalTeardown(): Promise<void> {}
