// `distvae/graph`: decoder graphs as data — locality analysis (what row sharding and halo-exact
// tiles need of each stage), the readable text dump, the ONNX wire format, exact ratios.

export { analyzeLocality, formatScale, type LocalityReport, type StageLocality } from '../graph/locality.js';
export { formatRatio } from '../graph/ratio.js';
export { dumpModel } from '../graph/dump.js';
export { modelInPrecision, PRECISIONS, type Precision } from '../graph/precision.js';
export { decodeModel, encodeModel, type ModelProto } from '../graph/onnx-proto.js';
