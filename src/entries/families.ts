// `distvae/families`: the family registry and what a family declares — names, diffusers class
// names, configs, geometry, tiling defaults — plus TAE's variants and seeded synthetic weights.

export { decoderWeightBytes, FAMILIES, familyForClassName, getFamily, resolveFamily } from '../families/registry.js';
export { TAE_KEY_LAYOUTS, TAE_VARIANTS, type TaeKeyLayout, type TaeVariant } from '../families/tae/spec.js';
export type {
  FamilySpec,
  FrameTiling,
  RawConfig,
  ResolvedConfig,
  Size2,
  TilingDefaults,
  TilingState,
  VaeGeometry,
} from '../families/types.js';
export { syntheticWeights, type ParamSpec } from '../weights/synthetic.js';
