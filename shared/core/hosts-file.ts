import { bareMetalHostSchema } from '../schemas/bare-metal-host.js';
import { fastBareMetalHost } from './bare-metal-host-fast.js';
import { parseObjects, validateObjects } from './documents.js';
import { HostMacIndexer, indexHostsByMac, type HostMacEntry } from './host-index.js';
import { forEachJsonListItem } from './json-list.js';

/**
 * The MAC index of a hosts file (`bpa render --hosts`): what indexHostsByMac gives for the
 * file's validated BareMetalHosts, with the same errors. A JSON `BareMetalHostList` whose hosts
 * are all well formed is read host by host, each indexed and dropped at once, so that memory
 * holds the index (the nodes' MACs with `only`) rather than every host of the fleet. Any other
 * text, or a host the fast check leaves to zod, takes the general path, which words any error.
 */
export function indexHostsFile(text: string, only?: ReadonlySet<string>): Map<string, HostMacEntry> {
  const indexer = new HostMacIndexer(only);
  const streamed = forEachJsonListItem(text, (item) => {
    const host = fastBareMetalHost(item);
    if (host === undefined) return false;
    indexer.add(host);
    return true;
  });
  if (streamed) return indexer.index;
  return indexHostsByMac(validateObjects(parseObjects(text), bareMetalHostSchema), only);
}
