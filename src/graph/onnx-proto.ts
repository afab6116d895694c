// The ONNX wire format: the subset of onnx.proto that a built decoder graph uses, encoded and
// decoded with protobufjs (already a dependency, v8). Field names and numbers are copied from the
// official schema (github.com/onnx/onnx, onnx/onnx.proto3); protobuf field numbers are frozen
// there, so this subset reads and writes the same bytes as the full schema. Fields we never emit
// (sparse tensors, training info, functions, segment, external data) are simply left out: a
// decoder skips unknown fields.
//
// The TypeScript interfaces below mirror the messages with their snake_case proto names, so a
// model object reads like the schema; int64 values are plain numbers (every int64 we write —
// dims, attribute ints, versions — is far below 2^53).

import protobuf from 'protobufjs';
import { DistVaeError } from '../errors.js';

const ONNX_PROTO_SUBSET = `
syntax = "proto3";
package onnx;

message AttributeProto {
  enum AttributeType {
    UNDEFINED = 0; FLOAT = 1; INT = 2; STRING = 3; TENSOR = 4; GRAPH = 5;
    FLOATS = 6; INTS = 7; STRINGS = 8; TENSORS = 9; GRAPHS = 10;
  }
  string name = 1;
  AttributeType type = 20;
  float f = 2;
  int64 i = 3;
  bytes s = 4;
  TensorProto t = 5;
  repeated float floats = 7;
  repeated int64 ints = 8;
  repeated bytes strings = 9;
}

message ValueInfoProto {
  string name = 1;
  TypeProto type = 2;
  string doc_string = 3;
}

message NodeProto {
  repeated string input = 1;
  repeated string output = 2;
  string name = 3;
  string op_type = 4;
  string domain = 7;
  repeated AttributeProto attribute = 5;
  string doc_string = 6;
}

message ModelProto {
  int64 ir_version = 1;
  repeated OperatorSetIdProto opset_import = 8;
  string producer_name = 2;
  string producer_version = 3;
  string domain = 4;
  int64 model_version = 5;
  string doc_string = 6;
  GraphProto graph = 7;
  repeated StringStringEntryProto metadata_props = 14;
}

message StringStringEntryProto {
  string key = 1;
  string value = 2;
}

message GraphProto {
  repeated NodeProto node = 1;
  string name = 2;
  repeated TensorProto initializer = 5;
  string doc_string = 10;
  repeated ValueInfoProto input = 11;
  repeated ValueInfoProto output = 12;
  repeated ValueInfoProto value_info = 13;
}

message TensorProto {
  repeated int64 dims = 1;
  int32 data_type = 2;
  repeated float float_data = 4;
  repeated int32 int32_data = 5;
  repeated int64 int64_data = 7;
  string name = 8;
  string doc_string = 12;
  bytes raw_data = 9;
  repeated double double_data = 10;
  repeated StringStringEntryProto external_data = 13;
  int32 data_location = 14;
}

message TensorShapeProto {
  message Dimension {
    oneof value {
      int64 dim_value = 1;
      string dim_param = 2;
    }
    string denotation = 3;
  }
  repeated Dimension dim = 1;
}

message TypeProto {
  message Tensor {
    int32 elem_type = 1;
    TensorShapeProto shape = 2;
  }
  oneof value {
    Tensor tensor_type = 1;
  }
  string denotation = 6;
}

message OperatorSetIdProto {
  string domain = 1;
  int64 version = 2;
}
`;

/** TensorProto.DataType values (onnx.proto3). Only the types our graphs carry. */
export const DataType = {
  FLOAT: 1,
  UINT8: 2,
  INT8: 3,
  INT32: 6,
  INT64: 7,
  BOOL: 9,
  FLOAT16: 10,
  DOUBLE: 11,
} as const;
export type DataTypeCode = (typeof DataType)[keyof typeof DataType];

/** AttributeProto.AttributeType values (onnx.proto3). */
export const AttributeType = {
  FLOAT: 1,
  INT: 2,
  STRING: 3,
  TENSOR: 4,
  FLOATS: 6,
  INTS: 7,
  STRINGS: 8,
} as const;

export interface TensorProto {
  name?: string;
  dims?: number[];
  data_type?: number;
  raw_data?: Uint8Array;
  float_data?: number[];
  int32_data?: number[];
  int64_data?: number[];
  double_data?: number[];
  doc_string?: string;
  /** Where the data lives when `data_location` is EXTERNAL: keys `location`, `offset`, `length`. */
  external_data?: { key?: string; value?: string }[];
  /** 0 DEFAULT (in the message), 1 EXTERNAL. */
  data_location?: number;
}

export interface AttributeProto {
  name?: string;
  type?: number;
  f?: number;
  i?: number;
  s?: Uint8Array;
  t?: TensorProto;
  floats?: number[];
  ints?: number[];
  strings?: Uint8Array[];
}

export interface NodeProto {
  input?: string[];
  output?: string[];
  name?: string;
  op_type?: string;
  domain?: string;
  attribute?: AttributeProto[];
  doc_string?: string;
}

export interface DimensionProto {
  dim_value?: number;
  dim_param?: string;
}

export interface TypeProto {
  tensor_type?: { elem_type?: number; shape?: { dim?: DimensionProto[] } };
}

export interface ValueInfoProto {
  name?: string;
  type?: TypeProto;
  doc_string?: string;
}

export interface GraphProto {
  name?: string;
  node?: NodeProto[];
  initializer?: TensorProto[];
  input?: ValueInfoProto[];
  output?: ValueInfoProto[];
  value_info?: ValueInfoProto[];
  doc_string?: string;
}

export interface OperatorSetIdProto {
  domain?: string;
  version?: number;
}

/** An ONNX model (the subset of onnx.proto distvae builds and reads). */
export interface ModelProto {
  ir_version?: number;
  opset_import?: OperatorSetIdProto[];
  producer_name?: string;
  producer_version?: string;
  domain?: string;
  model_version?: number;
  doc_string?: string;
  graph?: GraphProto;
  metadata_props?: { key?: string; value?: string }[];
}

const root = protobuf.parse(ONNX_PROTO_SUBSET, { keepCase: true }).root;
const modelType = root.lookupType('onnx.ModelProto');
const graphType = root.lookupType('onnx.GraphProto');
const tensorType = root.lookupType('onnx.TensorProto');

/** protobuf's limit on one message: onnxruntime cannot parse a larger model. */
const MAX_MODEL_BYTES = 2 ** 31 - 1;

/** Wire tags (field << 3 | 2, length-delimited) of the fields written by hand below. */
const TAG_MODEL_GRAPH = (7 << 3) | 2;
const TAG_GRAPH_INITIALIZER = (5 << 3) | 2;
const TAG_TENSOR_RAW_DATA = (9 << 3) | 2;

function varintLength(n: number): number {
  let length = 1;
  for (let v = n; v >= 128; v = Math.floor(v / 128)) length++;
  return length;
}

function writeVarint(out: Uint8Array, at: number, n: number): number {
  let v = n;
  while (v >= 128) {
    out[at++] = (v % 128) | 128;
    v = Math.floor(v / 128);
  }
  out[at++] = v;
  return at;
}

/**
 * Serialises a model object to ONNX bytes (the bytes onnxruntime and onnx.load read).
 * protobufjs encodes everything but the initializers' raw_data; those bytes (nearly all of a
 * decoder) are copied once, straight into the output buffer — encoding them through protobufjs
 * took minutes and several times the model's size in memory for a 1 GB model. Protobuf
 * accepts fields in any order, so the initializers follow the rest of the graph.
 */
export function encodeModel(model: ModelProto): Uint8Array {
  const graph = model.graph;
  if (!graph?.initializer?.length) return modelType.encode(model).finish();
  const head = modelType.encode({ ...model, graph: undefined }).finish();
  const graphRest = graphType.encode({ ...graph, initializer: [] }).finish();
  const tensors = graph.initializer.map((t) => {
    const meta = tensorType.encode({ ...t, raw_data: undefined }).finish();
    const raw = t.raw_data ?? new Uint8Array(0);
    const length = meta.length + (raw.length > 0 ? 1 + varintLength(raw.length) + raw.length : 0);
    return { meta, raw, length };
  });
  const graphLength = graphRest.length + tensors.reduce((sum, t) => sum + 1 + varintLength(t.length) + t.length, 0);
  const total = head.length + 1 + varintLength(graphLength) + graphLength;
  if (total > MAX_MODEL_BYTES) {
    throw new DistVaeError(
      'UNSUPPORTED',
      `the model ${graph.name ?? ''} would take ${total} bytes, over protobuf's 2 GiB limit for one ONNX model; split it into stages (runtime/staged-session.ts)`,
    );
  }
  const out = new Uint8Array(total);
  out.set(head, 0);
  let at = head.length;
  out[at++] = TAG_MODEL_GRAPH;
  at = writeVarint(out, at, graphLength);
  out.set(graphRest, at);
  at += graphRest.length;
  for (const t of tensors) {
    out[at++] = TAG_GRAPH_INITIALIZER;
    at = writeVarint(out, at, t.length);
    out.set(t.meta, at);
    at += t.meta.length;
    if (t.raw.length > 0) {
      out[at++] = TAG_TENSOR_RAW_DATA;
      at = writeVarint(out, at, t.raw.length);
      out.set(t.raw, at);
      at += t.raw.length;
    }
  }
  return out;
}

/** Parses ONNX bytes into a model object; int64 fields become numbers, bytes stay Uint8Array. */
export function decodeModel(bytes: Uint8Array): ModelProto {
  try {
    const message = modelType.decode(bytes);
    return modelType.toObject(message, { longs: Number, defaults: false, arrays: false }) as ModelProto;
  } catch (cause) {
    throw new DistVaeError('FILE_INVALID', `bytes are not an ONNX ModelProto: ${(cause as Error).message}`, { cause });
  }
}
