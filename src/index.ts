// Public API: re-exports only.
export * from './errors.js';
export * from './tensor.js';
export * from './graph/builder.js';
export { dumpModel } from './graph/dump.js';
export { GROUP_NORM_FORMS, type GroupNormForm } from './graph/group-norm.js';
export { decodeModel, encodeModel, type ModelProto } from './graph/onnx-proto.js';
export { EXECUTION_PROVIDERS, listProviders, type ProviderName, type ProviderStatus } from './runtime/providers.js';
export * from './runtime/session.js';
