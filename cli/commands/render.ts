import { readFile } from 'node:fs/promises';
import { BpaError, describeError } from '../../shared/errors.js';
import { parseObjects, parseSingleObject, validateObjects } from '../../shared/core/documents.js';
import { indexHostsFile } from '../../shared/core/hosts-file.js';
import { parseLeases } from '../../shared/core/leases.js';
import { nodeMacsOf } from '../../shared/core/node-plan.js';
import { renderCluster, type RenderedCluster } from '../../shared/core/render.js';
import type { KudJobOptions } from '../../shared/core/kud-job.js';
import { podSchema } from '../../shared/schemas/pod.js';
import { vmiSchema } from '../../shared/schemas/vmi.js';
import { provisioningSchema } from '../../shared/schemas/provisioning.js';
import type { CliCommand } from '../command.js';
import { UsageError } from '../command.js';
import { parseFlags } from '../flags.js';

const usage = `Usage: bpa render --provisioning FILE [--hosts FILE] [--leases FILE] [--pods FILE]
                  [--vmis FILE] [--output ini|json]

Dry run: resolve a Provisioning's nodes and print what would be installed, without a cluster.

Options:
  --provisioning FILE  the Provisioning (YAML or JSON, one object)
  --hosts FILE         BareMetalHosts: multi-document YAML, a List/BareMetalHostList, or a JSON array
  --leases FILE        a DHCP lease file, ISC dhcpd.leases or dnsmasq (detected); tried before the
                       hosts' inspected NICs
  --pods FILE          Pods, for a Provisioning labelled cluster-type: virtlet-vm (same forms as --hosts)
  --vmis FILE          KubeVirt VirtualMachineInstances, for cluster-type: kubevirt-vm (same forms as
                       --hosts): the Running ones, MAC and IP from status.interfaces[]
  --output ini|json    ini (default): the hosts.ini text; json: cluster, clusterType, nodes,
                       inventory, job and clusterConfigMap
  -h, --help           show this help

A node's cpu and memory are checked against the hosts that report inspected hardware
(status.hardware.cpu.count, ramMebibytes); hosts without it are not checked.

Exit status: 0 rendered; 1 resolution or the preflight failed (the reason on stderr, one line);
2 bad options or an unreadable or invalid file.
`;

/** A named input text: the name appears in every message about it. */
export interface InputText {
  name: string;
  text: string;
}

export interface RenderInputs {
  provisioning: InputText;
  hosts?: InputText;
  leases?: InputText;
  pods?: InputText;
  vmis?: InputText;
}

/**
 * Parse, resolve and render from the files' contents: no I/O, usable by any command.
 * A file that cannot be parsed or validated throws UsageError naming the file (exit 2);
 * a resolution failure throws the BpaError with the contract's message (exit 1).
 */
export function renderFromContents(inputs: RenderInputs, jobOptions: KudJobOptions = {}): RenderedCluster {
  const provisioning = fromFile(inputs.provisioning, (text) =>
    parseSingleObject(text, provisioningSchema, 'Provisioning'),
  );
  // Only the nodes' MACs are kept from the hosts: a fleet can be far larger than the cluster.
  const only = nodeMacsOf(provisioning.spec);
  const hostsByMac = inputs.hosts && fromFile(inputs.hosts, (text) => indexHostsFile(text, only));
  const pods = inputs.pods && fromFile(inputs.pods, (text) => validateObjects(parseObjects(text), podSchema));
  const vmis = inputs.vmis && fromFile(inputs.vmis, (text) => validateObjects(parseObjects(text), vmiSchema));
  const leases = inputs.leases && fromFile(inputs.leases, (text) => parseLeases(text));
  return renderCluster(
    provisioning,
    {
      ...(hostsByMac && { hostsByMac }),
      ...(pods && { pods }),
      ...(vmis && { vmis }),
      ...(leases && { leases }),
    },
    jobOptions,
  );
}

function fromFile<T>(input: InputText, parse: (text: string) => T): T {
  try {
    return parse(input.text);
  } catch (error) {
    const message = describeError(error).message;
    throw new UsageError(`${input.name}: ${message}`);
  }
}

/** The JSON form of a render: the keys `bpa render --output json` promises. */
export function renderJson(rendered: RenderedCluster): string {
  const { cluster, clusterType, nodes, inventory, job, clusterConfigMap } = rendered;
  return JSON.stringify({ cluster, clusterType, nodes, inventory, job, clusterConfigMap }, null, 2) + '\n';
}

function parseRenderArgs(argv: string[]) {
  const values = parseFlags(
    argv,
    {
      provisioning: { type: 'string' },
      hosts: { type: 'string' },
      leases: { type: 'string' },
      pods: { type: 'string' },
      vmis: { type: 'string' },
      output: { type: 'string', default: 'ini' },
    },
    usage,
  );
  if (!values.provisioning) throw new UsageError(`--provisioning FILE is required\n\n${usage}`);
  if (values.output !== 'ini' && values.output !== 'json')
    throw new UsageError(`--output must be ini or json, not ${JSON.stringify(values.output)}`);
  return { ...values, provisioning: values.provisioning, output: values.output };
}

async function readInput(path: string | undefined): Promise<InputText | undefined> {
  if (path === undefined) return undefined;
  try {
    return { name: path, text: await readFile(path, 'utf8') };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EISDIR'
          ? 'is a directory'
          : code === 'EACCES'
            ? 'permission denied'
            : describeError(error).message;
    throw new UsageError(`cannot read ${path}: ${why}`);
  }
}

export const renderCommand: CliCommand = {
  name: 'render',
  usage,
  run: async (argv, io) => {
    const options = parseRenderArgs(argv);
    const [provisioning, hosts, leases, pods, vmis] = await Promise.all([
      readInput(options.provisioning),
      readInput(options.hosts),
      readInput(options.leases),
      readInput(options.pods),
      readInput(options.vmis),
    ]);
    let rendered: RenderedCluster;
    try {
      rendered = renderFromContents({
        provisioning: provisioning!,
        ...(hosts && { hosts }),
        ...(leases && { leases }),
        ...(pods && { pods }),
        ...(vmis && { vmis }),
      });
    } catch (error) {
      if (error instanceof BpaError) {
        // Exactly the contract's message, one line, nothing else.
        io.stderr(`${error.message}\n`);
        return 1;
      }
      throw error;
    }
    io.stdout(options.output === 'json' ? renderJson(rendered) : rendered.inventory);
    return 0;
  },
};
