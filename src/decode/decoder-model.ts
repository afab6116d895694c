// The fused decoder graph as a ModelProto — what locality analysis, staging and row sharding
// read — from a family's own graph builder (FamilyRuntime.decoderGraph), for loaded weights or
// for an architecture alone (zero weights of the right shapes: the analysis reads shapes, never
// values). A family that does not expose its graph is refused by name, naming those that do.

import { reason, refuse } from '../errors.js';
import { familyNamesWhere } from '../families/registry.js';
import type { FamilyRuntime } from '../families/runtime-types.js';
import type { FamilySpec, ResolvedConfig } from '../families/types.js';
import type { ModelProto } from '../graph/onnx-proto.js';
import { elementCount, type Tensor } from '../tensor.js';

export function decoderModelOf(
  family: FamilySpec,
  runtime: FamilyRuntime,
  config: ResolvedConfig,
  weights: ReadonlyMap<string, Tensor>,
): ModelProto {
  if (!runtime.decoderGraph) {
    refuse(
      'UNSUPPORTED',
      reason(
        'NO_DECODER_GRAPH',
        'family',
        family.name,
        `a family that exposes its decoder graph (${familyNamesWhere((r) => r.decoderGraph !== undefined).join(', ')})`,
        `the ${family.name} family does not expose its decoder graph${runtime.graphWithheld ? ` (${runtime.graphWithheld})` : ''}: locality analysis and row sharding need it`,
      ),
    );
  }
  return runtime.decoderGraph(config, weights).toModel();
}

/** The decoder graph of an architecture with zero weights (for analysis without a checkpoint). */
export function architectureModel(family: FamilySpec, runtime: FamilyRuntime, config: ResolvedConfig): ModelProto {
  const weights = new Map(
    runtime.decoderParams(config).map((p) => [p.name, { dims: [...p.dims], data: new Float32Array(elementCount(p.dims)) }]),
  );
  return decoderModelOf(family, runtime, config, weights);
}
