import { BpaError } from '../../../shared/errors.js';
import { chainEvent } from '../../../shared/cloudevents/chain-event.js';
import { EventTypes, provisioningSubject } from '../../../shared/events/types.js';

const provisioning = { namespace: 'lab', name: 'cluster-a', uid: 'uid-1', generation: 2 };

describe('chainEvent', () => {
  it('builds a chain event with the contract attributes', () => {
    const event = chainEvent(
      EventTypes.inventoryRendered,
      'inventory-render',
      provisioningSubject('lab', 'cluster-a'),
      {
        provisioning,
        cluster: 'cluster-a',
        clusterType: 'baremetal',
        configMap: 'cluster-a-inventory',
        inventorySha256: 'a'.repeat(64),
      },
      { cluster: 'cluster-a', id: 'fixed', time: '2026-01-01T00:00:00.000Z' },
    );
    expect(event.toJSON()).toEqual({
      specversion: '1.0',
      id: 'fixed',
      time: '2026-01-01T00:00:00.000Z',
      type: 'org.akraino.icn.bpa.inventory.rendered',
      source: '/bpa-functions/inventory-render',
      subject: 'namespaces/lab/provisionings/cluster-a',
      datacontenttype: 'application/json',
      cluster: 'cluster-a',
      data: {
        provisioning,
        cluster: 'cluster-a',
        clusterType: 'baremetal',
        configMap: 'cluster-a-inventory',
        inventorySha256: 'a'.repeat(64),
      },
    });
    expect(event.validate()).toBe(true);
  });

  it('refuses data that does not match the type, naming the field', () => {
    const build = () =>
      chainEvent(
        EventTypes.provisioningFailed,
        'host-lookup',
        provisioningSubject('lab', 'cluster-a'),
        // @ts-expect-error: the missing field is the point of the test
        { provisioning, cluster: 'cluster-a', step: 'HostsResolved', reason: 'HostNotFound' },
        { cluster: 'cluster-a' },
      );
    expect(build).toThrow(BpaError);
    expect(build).toThrow(
      /host-lookup built an invalid org\.akraino\.icn\.bpa\.provisioning\.failed event: message:/,
    );
  });
});
