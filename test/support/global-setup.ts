// PLACEHOLDER: the control-plane work replaces this with a real etcd + kube-apiserver start.
export default async function globalSetup(): Promise<void> {}
