// Public API: re-exports only.
export * from './errors.js';
export * from './tensor.js';
