// Where a tensor's bytes lie in a local file: what an external ONNX tensor names and what a
// scratch file hands back for each tensor it holds. A type only, shared by the Node and page twins.

/** Where a tensor's little-endian bytes lie in a file (an absolute path). */
export interface FileBytes {
  readonly path: string;
  readonly offset: number;
  readonly length: number;
}
