// The GPU adapters onnxruntime's WebGPU provider can run on from Node, and how a process is
// pinned to one (docs/design.md §13 "GPU devices"). onnxruntime-node 1.30 cannot choose an
// adapter: its WebGPU options have no adapter index (`deviceId` is a WebGPU *context* id, which
// needs a WGPUDevice handle from outside), `powerPreference` and `dawnBackendType` only steer
// Dawn's one default choice, and Node has no `navigator.gpu`. What does choose, on Linux, is the
// Vulkan device-select layer Mesa installs (implicit, over every Vulkan driver: NVIDIA's, AMD's,
// Intel's, Mesa's): `MESA_VK_DEVICE_SELECT=list` makes a process that opens Vulkan print the
// devices and exit, and `MESA_VK_DEVICE_SELECT=vid:did` with `…_FORCE_DEFAULT_DEVICE=1` leaves a
// process exactly that device. So adapters are listed by a probe process that opens a WebGPU
// session with `list` set, and a process is pinned — before its first WebGPU session opens Dawn —
// by setting the two variables in its own environment: one adapter per process, so ranks on
// different adapters are process ranks. Without the layer (no Mesa, Windows' D3D12, macOS'
// Metal) only the default adapter, id 0, is known. Adapter limits and features are not readable
// here (onnxruntime asks Dawn for the adapter's maxima but reports none), so they are listed as
// unknown and plans use WebGPU's defaults (memory/device-limits.ts). Only one adapter (lavapipe)
// has been tested: several GPUs are untested.

import { reason, refuse, type Reason } from '../errors.js';
import { nativeOutputShown } from './native-output.js';
import { runProbeProcess } from './providers.js';

/** One adapter as the Vulkan device-select layer lists it. */
export interface GpuAdapter {
  /** What `--device` / `localGroup({ devices })` take: the adapter's place in the listing. */
  id: number;
  name: string;
  /** PCI vendor and device ids, hex, as the driver reports them (null: not known). */
  vendorId: string | null;
  deviceId: string | null;
  /** The vendor by its PCI id, where known. */
  vendor: string | null;
  /** 'discrete GPU', 'integrated GPU', 'virtual GPU', 'CPU' (a software rasteriser such as lavapipe), 'other'. */
  type: string | null;
  /** The graphics API Dawn runs on under onnxruntime here. */
  backend: 'vulkan' | 'd3d12' | 'metal';
  /** Buffer limits in bytes; null: not readable from onnxruntime-node (plans use WebGPU's defaults). */
  limits: { maxBufferSize: number; maxStorageBufferBindingSize: number } | null;
  /** Whether the adapter has shader-f16; null: not readable. */
  shaderF16: boolean | null;
}

/** The adapters of this machine, and how they were found. */
export interface AdapterListing {
  /** 'device-select': Mesa's Vulkan layer listed them; 'default': only the default adapter is known; 'none': WebGPU does not initialise here. */
  method: 'device-select' | 'default' | 'none';
  adapters: GpuAdapter[];
  /** What the listing cannot say, one sentence each. */
  notes: string[];
}

const SELECT_ENV = 'MESA_VK_DEVICE_SELECT';
const FORCE_ENV = 'MESA_VK_DEVICE_SELECT_FORCE_DEFAULT_DEVICE';

const VENDORS: Readonly<Record<string, string>> = {
  '10de': 'NVIDIA',
  '1002': 'AMD',
  '8086': 'Intel',
  '13b5': 'ARM',
  '5143': 'Qualcomm',
  '106b': 'Apple',
  '1af4': 'virtio',
  '10005': 'Mesa (software)',
};

const UNKNOWN_LIMITS =
  "limits and shader-f16 are not readable from onnxruntime-node: plans use WebGPU's default limits (128 MiB per tensor) unless --max-tensor replaces them";
const UNTESTED = 'only one adapter (lavapipe) has been tested: several GPUs are untested';

function backendHere(): GpuAdapter['backend'] {
  return process.platform === 'win32' ? 'd3d12' : process.platform === 'darwin' ? 'metal' : 'vulkan';
}

/** The adapters in the device-select layer's `list` output ("  GPU 0: 10005:0 \"llvmpipe (…)\" CPU"). */
export function parseDeviceSelectList(text: string): GpuAdapter[] {
  const adapters: GpuAdapter[] = [];
  for (const line of text.split('\n')) {
    const m = /^\s*GPU (\d+): ([0-9a-fA-F]+):([0-9a-fA-F]+) "(.*)"\s*(.*)$/.exec(line);
    if (!m) continue;
    const vendorId = m[2]!.toLowerCase();
    adapters.push({
      id: Number(m[1]),
      name: m[4]!,
      vendorId,
      deviceId: m[3]!.toLowerCase(),
      vendor: VENDORS[vendorId] ?? null,
      type: m[5]!.trim() || null,
      backend: 'vulkan',
      limits: null,
      shaderF16: null,
    });
  }
  return adapters;
}

/** This process's environment without a device selection (so a listing sees every device). */
function unselected(): Record<string, string | undefined> {
  return { [SELECT_ENV]: 'list', [FORCE_ENV]: undefined };
}

let listing: Promise<AdapterListing> | null = null;

/**
 * The WebGPU adapters of this machine (memoised per process): on Linux through a probe process
 * with the device-select layer's `list`; elsewhere, or without the layer, the default adapter
 * alone; none where WebGPU does not initialise (`notes` says why).
 */
export function listAdapters(): Promise<AdapterListing> {
  listing ??= (async (): Promise<AdapterListing> => {
    const notes = [UNKNOWN_LIMITS, UNTESTED];
    if (backendHere() === 'vulkan') {
      const listed = await runProbeProcess('webgpu', unselected());
      if (nativeOutputShown() && listed.stderr) process.stderr.write(listed.stderr);
      const adapters = parseDeviceSelectList(listed.stderr);
      if (adapters.length > 0) return { method: 'device-select', adapters, notes };
    }
    // No layer to list with: what a plain probe shows is whether the default adapter exists.
    const plain = await runProbeProcess('webgpu');
    if (plain.failure !== null)
      return { method: 'none', adapters: [], notes: [`WebGPU does not initialise here: ${plain.failure}`, ...notes] };
    const adapter: GpuAdapter = {
      id: 0,
      name: 'the default adapter',
      vendorId: null,
      deviceId: null,
      vendor: null,
      type: null,
      backend: backendHere(),
      limits: null,
      shaderF16: null,
    };
    const why =
      backendHere() === 'vulkan'
        ? "Mesa's Vulkan device-select layer is not installed (Debian: mesa-vulkan-drivers), so only the default adapter, id 0, is known and selectable"
        : `onnxruntime-node cannot list or choose ${backendHere()} adapters: only the default adapter, id 0, is selectable`;
    return { method: 'default', adapters: [adapter], notes: [why, ...notes] };
  })();
  return listing;
}

/** Why each of `ids` cannot be used (field names `devices[i]`, or `field` for one id); empty: all can. */
export function adapterReasons(ids: readonly (number | undefined)[], found: AdapterListing, field = 'devices'): Reason[] {
  const reasons: Reason[] = [];
  const valid =
    found.adapters.length === 0
      ? 'no id: there is no WebGPU adapter here'
      : `an adapter id of \`distvae devices\`: ${found.adapters.map((a) => `${a.id} (${a.name})`).join(', ')}`;
  ids.forEach((id, i) => {
    if (id === undefined) return;
    const name = ids.length === 1 && field !== 'devices' ? field : `${field}[${i}]`;
    const adapter = found.adapters.find((a) => a.id === id);
    if (!adapter) {
      reasons.push(reason('DEVICE_INVALID', name, id, valid, `${name} ${id}: no such WebGPU adapter here; valid: ${valid}`));
      return;
    }
    // The layer selects by vendor:device id: of identical GPUs only the first can be chosen.
    const twin = found.adapters.find((a) => a.id < adapter.id && a.vendorId === adapter.vendorId && a.deviceId === adapter.deviceId);
    if (twin)
      reasons.push(
        reason(
          'DEVICE_INVALID',
          name,
          id,
          valid,
          `${name} ${id}: adapter ${id} has the same vendor:device id (${adapter.vendorId}:${adapter.deviceId}) as adapter ${twin.id}, and the Vulkan device-select layer chooses by that id: it cannot be told apart`,
        ),
      );
  });
  return reasons;
}

/** Refuses (INVALID_ARGUMENT, every reason at once) adapter ids this machine does not have; before any work. */
export async function checkAdapters(ids: readonly (number | undefined)[], field = 'devices'): Promise<void> {
  if (ids.every((id) => id === undefined)) return;
  const reasons = adapterReasons(ids, await listAdapters(), field);
  if (reasons.length > 0) refuse('INVALID_ARGUMENT', reasons);
}

/** The environment that leaves a process exactly `adapter` (Vulkan device-select); empty for the default adapter without the layer. */
export function adapterEnvironment(adapter: GpuAdapter): Record<string, string> {
  if (adapter.vendorId === null || adapter.deviceId === null) return {};
  return { [SELECT_ENV]: `${adapter.vendorId}:${adapter.deviceId}`, [FORCE_ENV]: '1' };
}

let pinned: number | null = null;

/**
 * Pins this process to adapter `id` before its first WebGPU session (and the provider probe,
 * which inherits the environment). Refused for an id this machine lacks, and for a second,
 * different id: Dawn opens one device per process.
 */
export async function pinAdapter(id: number): Promise<void> {
  if (pinned === id) return;
  await checkAdapters([id], 'deviceId');
  if (pinned !== null)
    refuse(
      'INVALID_ARGUMENT',
      reason(
        'DEVICE_INVALID',
        'deviceId',
        id,
        `${pinned} (this process's adapter)`,
        `deviceId ${id}: this process already runs WebGPU on adapter ${pinned}, and a process has one adapter; give ranks on different adapters process isolation`,
      ),
    );
  const found = await listAdapters();
  Object.assign(process.env, adapterEnvironment(found.adapters.find((a) => a.id === id)!));
  pinned = id;
}
