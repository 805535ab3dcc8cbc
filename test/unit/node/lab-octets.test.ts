import { createLabNetwork } from '../../../local/lab/lab-network.js';
import { labHostOctets } from '../../../local/lab/lab.js';
import { firstPodOctet, lastPodOctet } from '../../../local/node/network.js';

/**
 * The node's /24 is split: pods get firstPodOctet..lastPodOctet, machines on the node's network
 * (lab hosts) the rest. A lab host at a pod's address made SSH reach the pod instead.
 */
describe("the node's /24: pods below, lab machines above", () => {
  const attachment = { bridge: 'none', subnetPrefix: '10.250.99', netnsPrefix: 'unit-', slotIndex: 99 };

  it('keeps the lab hosts above every pod address', () => {
    expect(firstPodOctet).toBe(3);
    expect(Math.min(...labHostOctets(3))).toBeGreaterThan(lastPodOctet);
    expect(Math.max(...labHostOctets(3))).toBeLessThanOrEqual(254);
  });

  it('refuses a lab host octet a pod may get, before touching any network', async () => {
    await expect(createLabNetwork(attachment, [251, lastPodOctet])).rejects.toMatchObject({
      reason: 'LabAddressInPodRange',
      message: expect.stringContaining(`lab host octets ${lastPodOctet} are not in ${lastPodOctet + 1}-254`),
    });
    await expect(createLabNetwork(attachment, [255])).rejects.toMatchObject({
      reason: 'LabAddressInPodRange',
    });
  });
});
