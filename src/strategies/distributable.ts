// What a VAE must offer to be decoded on other ranks: a source a rank can load and a content
// hash to check it loaded the same VAE; and, for the strategies that analyse the decoder
// (row sharding, halo-exact tiles), its graph.

import type { LoadOptions } from '../decode/vae.js';
import type { VaeSpec } from '../families/types.js';
import type { ModelProto } from '../graph/onnx-proto.js';
import type { VaeSource } from '../sources/vae-source.js';

/** A VAE that ranks can load: its plain-data source, load options and content hash (a loaded `Vae` is one). */
export interface DistributableVae extends VaeSpec {
  readonly source: VaeSource;
  readonly loadOptions: LoadOptions;
  contentHash(): string;
}

/** A distributable VAE whose decoder graph can be analysed (a loaded `Vae` is one). */
export interface AnalyzableVae extends DistributableVae {
  decoderModel(): ModelProto;
}
