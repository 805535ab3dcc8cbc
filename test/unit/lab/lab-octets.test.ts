import { createLabNetwork } from '../../../local/lab/lab-network.js';
import { labHostOctets } from '../../../local/lab/lab.js';

/**
 * The lab's /24 on the real node's lab bridge: .1 is the node (the hosts' gateway back to pods and
 * the machine); lab hosts take 2-254, checked before anything touches the network.
 */
describe("the node's lab /24", () => {
  const attachment = {
    bridge: 'none',
    subnetPrefix: '10.247.99',
    gateway: '10.247.99.1',
    returnRoutes: [],
    netnsPrefix: 'unit-',
    index: 99,
    firstHostOctet: 2,
  };

  it('gives the lab hosts octets of the /24 other than the gateway', () => {
    expect(Math.min(...labHostOctets(3))).toBeGreaterThanOrEqual(attachment.firstHostOctet);
    expect(Math.max(...labHostOctets(4))).toBeLessThanOrEqual(254);
  });

  it("refuses the gateway's octet or one outside the /24, before touching any network", async () => {
    await expect(createLabNetwork(attachment, [251, 1])).rejects.toMatchObject({
      reason: 'LabAddressOutOfRange',
      message: expect.stringContaining('lab host octets 1 are not in 2-254 of 10.247.99.0/24'),
    });
    await expect(createLabNetwork(attachment, [255])).rejects.toMatchObject({
      reason: 'LabAddressOutOfRange',
    });
  });
});
