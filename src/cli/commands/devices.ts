// `distvae devices`: the WebGPU adapters ranks can be mapped to (`--device`), with what is known
// of each, and what cannot be known from Node said plainly (runtime/devices.ts).

import { listAdapters, type GpuAdapter } from '../../entries/ranks.js';
import { JSON_OPTION, type CommandSpec } from '../args.js';
import { showNativeOutput } from '../../entries/decode.js';

const MIB = 2 ** 20;

function describe(a: GpuAdapter): string {
  const ids = a.vendorId !== null ? ` [${a.vendorId}:${a.deviceId}]` : '';
  const what = [a.vendor, a.type, a.backend].filter((s) => s !== null).join(', ');
  const limits = a.limits
    ? `maxBufferSize ${a.limits.maxBufferSize / MIB} MiB, maxStorageBufferBindingSize ${a.limits.maxStorageBufferBindingSize / MIB} MiB`
    : 'limits unknown';
  const f16 = a.shaderF16 === null ? 'shader-f16 unknown' : a.shaderF16 ? 'shader-f16' : 'no shader-f16';
  return `${a.id}  ${a.name}${ids}  (${what}; ${limits}; ${f16})`;
}

export const devicesCommand: CommandSpec = {
  name: 'devices',
  summary: 'list the WebGPU adapters --device can map ranks to, and what is known of them',
  usage: ['distvae devices [--json] [--verbose]'],
  options: [JSON_OPTION, { name: 'verbose', kind: 'boolean', description: "show the GPU drivers' own lines" }],
  details: [
    "On Linux the adapters are listed by Mesa's Vulkan device-select layer (MESA_VK_DEVICE_SELECT=list in a probe",
    'process), and a rank process is pinned to its adapter through the same layer; without the layer (and on Windows',
    'and macOS) only the default adapter, 0, is known. onnxruntime-node reports no adapter limits or features, so',
    "plans use WebGPU's default limits (128 MiB per tensor) unless --max-tensor replaces them. Several GPUs are untested.",
    'The JSON is { method, adapters: [{ id, name, vendorId, deviceId, vendor, type, backend, limits, shaderF16 }], notes }.',
  ],
  async run(args, io) {
    showNativeOutput(args.flag('verbose'));
    args.done();
    const listing = await listAdapters();
    if (args.flag('json')) {
      io.stdout(JSON.stringify(listing) + '\n');
      return 0;
    }
    const how =
      listing.method === 'device-select'
        ? "listed by Mesa's Vulkan device-select layer"
        : listing.method === 'default'
          ? 'the default adapter only'
          : 'none';
    const lines = [
      `WebGPU adapters (${how}):`,
      ...listing.adapters.map((a) => `  ${describe(a)}`),
      ...listing.notes.map((n) => `note: ${n}`),
    ];
    io.stdout(lines.join('\n') + '\n');
    return 0;
  },
};
