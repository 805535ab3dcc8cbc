// Knative's own components as images, from the binaries engines/build.sh built from their Go
// modules (~/.cache/bpa-functions/knative-*): the image `ko` would make of each main package, one
// static binary at /ko-app/<name> with KO_DATA_PATH set, as 65532. Knative's config/ YAML names
// them by `ko://<import path>`; `<out>/ko-images.json` maps each such path to the built image by
// digest, for whoever installs that YAML (container images and the env values that name images,
// such as the controller's APISERVER_RA_IMAGE).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { knativeBinaryDir, type KnativeSet } from '../knative/binaries.js';
import type { TarEntry } from './tar.js';
import { imageUser, type ImageRecipe } from './recipes.js';

/** `ko://` import path of each binary (the reference config/ names it by). */
export const koPaths: Record<KnativeSet, Record<string, string>> = {
  knative: {
    controller: 'knative.dev/eventing/cmd/controller',
    webhook: 'knative.dev/eventing/cmd/webhook',
    mtchannel_broker: 'knative.dev/eventing/cmd/mtchannel_broker',
    ingress: 'knative.dev/eventing/cmd/broker/ingress',
    filter: 'knative.dev/eventing/cmd/broker/filter',
    channel_controller: 'knative.dev/eventing/cmd/in_memory/channel_controller',
    channel_dispatcher: 'knative.dev/eventing/cmd/in_memory/channel_dispatcher',
    apiserver_receive_adapter: 'knative.dev/eventing/cmd/apiserver_receive_adapter',
    mtping: 'knative.dev/eventing/cmd/mtping',
    jobsink: 'knative.dev/eventing/cmd/jobsink',
    requestreply: 'knative.dev/eventing/cmd/requestreply',
    event_display: 'knative.dev/eventing/cmd/event_display',
  },
  'knative-serving': { webhook: 'knative.dev/serving/cmd/webhook' },
};

/** The image name of a binary: knative-eventing-<binary> or knative-serving-<binary>. */
export function knativeImageName(set: KnativeSet, binary: string): string {
  return `${set === 'knative' ? 'knative-eventing' : 'knative-serving'}-${binary.replaceAll('_', '-')}`;
}

export interface KnativeRecipe extends ImageRecipe {
  koPath: string;
}

const dir = (path: string): TarEntry => ({ type: 'dir', path, mode: 0o755, uid: 0, gid: 0 });

/** A recipe per built binary; a set not built yet gives none (engines/build.sh knative builds it). */
export function knativeRecipes(env: NodeJS.ProcessEnv = process.env): KnativeRecipe[] {
  return (Object.keys(koPaths) as KnativeSet[]).flatMap((set) => {
    const binaries = knativeBinaryDir(set, env);
    return Object.entries(koPaths[set])
      .filter(([binary]) => existsSync(join(binaries, binary)))
      .map(([binary, koPath]) => ({
        name: knativeImageName(set, binary),
        koPath,
        layers: [
          {
            name: `${set} ${binary}`,
            entries: (): TarEntry[] => {
              const bytes = readFileSync(join(binaries, binary));
              return [
                dir('ko-app'),
                {
                  type: 'file',
                  path: `ko-app/${binary}`,
                  mode: 0o755,
                  size: bytes.length,
                  source: { bytes },
                  uid: 0,
                  gid: 0,
                },
                { type: 'dir', path: 'tmp', mode: 0o1777, uid: 0, gid: 0 },
                dir('var'),
                dir('var/run'),
                dir('var/run/ko'),
              ];
            },
          },
        ],
        run: {
          User: imageUser,
          Entrypoint: [`/ko-app/${binary}`],
          Env: ['PATH=/ko-app', 'KO_DATA_PATH=/var/run/ko'],
          WorkingDir: '/',
          Labels: {
            'org.opencontainers.image.title': knativeImageName(set, binary),
            'dev.ko.import-path': koPath,
          },
        },
      }));
  });
}
