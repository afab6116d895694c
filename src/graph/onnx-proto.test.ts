// The wire format: field numbers checked byte by byte against onnx.proto3 (a protobuf tag is
// (field_number << 3) | wire_type, so each expected byte below can be read off the schema), and
// a full model surviving encode → decode with its weights bit-exact.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DistVaeError } from '../errors.js';
import { GraphBuilder } from './builder.js';
import { AttributeType, DataType, decodeModel, encodeModel } from './onnx-proto.js';
import { seededTensor } from '../tensor.js';

const bytes = (model: Parameters<typeof encodeModel>[0]) => Array.from(encodeModel(model));

test('ModelProto fields: ir_version = 1, opset_import = 8 (domain 1, version 2), producer_name = 2, graph = 7', () => {
  assert.deepEqual(bytes({ ir_version: 10 }), [0x08, 10]);
  assert.deepEqual(bytes({ opset_import: [{ domain: 'x', version: 21 }] }), [0x42, 5, 0x0a, 1, 0x78, 0x10, 21]);
  assert.deepEqual(bytes({ producer_name: 'a' }), [0x12, 1, 0x61]);
  assert.deepEqual(bytes({ graph: { name: 'g' } }), [0x3a, 3, 0x12, 1, 0x67]);
});

test('GraphProto / NodeProto / AttributeProto fields', () => {
  // graph.node = 1; node: input = 1, output = 2, name = 3, op_type = 4, attribute = 5
  const node = { input: ['i'], output: ['o'], name: 'n', op_type: 'R', attribute: [{ name: 'a', type: AttributeType.INT, i: 3 }] };
  // attribute: name = 1, i = 3 (varint), type = 20 (tag 160 = varint 0xa0 0x01)
  const attribute = [0x0a, 1, 0x61, 0x18, 3, 0xa0, 0x01, AttributeType.INT];
  const nodeBytes = [0x0a, 1, 0x69, 0x12, 1, 0x6f, 0x1a, 1, 0x6e, 0x22, 1, 0x52, 0x2a, attribute.length, ...attribute];
  assert.deepEqual(bytes({ graph: { node: [node] } }), [0x3a, nodeBytes.length + 2, 0x0a, nodeBytes.length, ...nodeBytes]);
  // graph.initializer = 5, input = 11, output = 12
  const init = bytes({ graph: { initializer: [{ name: 'w' }] } });
  assert.deepEqual(init.slice(2), [0x2a, 3, 0x42, 1, 0x77]); // TensorProto.name = 8
  assert.deepEqual(bytes({ graph: { input: [{ name: 'x' }] } }).slice(2, 3), [0x5a]);
  assert.deepEqual(bytes({ graph: { output: [{ name: 'y' }] } }).slice(2, 3), [0x62]);
});

test('TensorProto: dims = 1 (packed), data_type = 2, raw_data = 9; TensorShapeProto dim_value = 1 / dim_param = 2', () => {
  const t = { dims: [2, 3], data_type: DataType.FLOAT, raw_data: Uint8Array.of(1, 2) };
  const tensorBytes = [0x0a, 2, 2, 3, 0x10, 1, 0x4a, 2, 1, 2];
  assert.deepEqual(bytes({ graph: { initializer: [t] } }), [0x3a, tensorBytes.length + 2, 0x2a, tensorBytes.length, ...tensorBytes]);
  // ValueInfoProto.type = 2 → TypeProto.tensor_type = 1 → elem_type = 1, shape = 2 → dim = 1 → {dim_value = 1 | dim_param = 2}
  const info = { name: 'x', type: { tensor_type: { elem_type: DataType.FLOAT, shape: { dim: [{ dim_value: 4 }, { dim_param: 'h' }] } } } };
  const dims = [0x0a, 2, 0x08, 4, 0x0a, 3, 0x12, 1, 0x68];
  const tensorType = [0x08, 1, 0x12, dims.length, ...dims];
  const type = [0x0a, tensorType.length, ...tensorType];
  const valueInfo = [0x0a, 1, 0x78, 0x12, type.length, ...type];
  assert.deepEqual(bytes({ graph: { input: [info] } }), [0x3a, valueInfo.length + 2, 0x5a, valueInfo.length, ...valueInfo]);
});

test('a built model survives encode → decode: structure and weights bit-exact', () => {
  const g = new GraphBuilder('roundtrip');
  const x = g.input('x', ['batch', 3, 'h', 'w']);
  const w = seededTensor([5, 3, 3, 3], 1);
  const conv = g.scope('conv');
  g.output('y', conv.conv(x, conv.param('weight', w), undefined, { pads: 1 }));
  const decoded = decodeModel(g.toModelBytes());
  assert.equal(decoded.ir_version, 10);
  assert.deepEqual(decoded.opset_import, [{ version: 21 }]);
  const init = decoded.graph!.initializer![0]!;
  assert.equal(init.name, 'conv.weight');
  assert.deepEqual(init.dims, [5, 3, 3, 3]);
  const raw = new Uint8Array(init.raw_data!);
  assert.deepEqual(new Float32Array(raw.buffer, 0, w.data.length), w.data);
  assert.deepEqual(decoded.graph!.input![0]!.type!.tensor_type!.shape!.dim, [
    { dim_param: 'batch' },
    { dim_value: 3 },
    { dim_param: 'h' },
    { dim_param: 'w' },
  ]);
  const node = decoded.graph!.node![0]!;
  assert.equal(node.op_type, 'Conv');
  assert.deepEqual(node.input, ['x', 'conv.weight']);
  assert.deepEqual(node.attribute!.find((a) => a.name === 'pads')!.ints, [1, 1, 1, 1]);
});

test('decodeModel refuses bytes that are not a ModelProto', () => {
  assert.throws(
    () => decodeModel(Uint8Array.of(0x0a, 0xff, 0xff)),
    (e: unknown) => e instanceof DistVaeError && e.code === 'FILE_INVALID',
  );
});

test('initializers written by hand (raw_data of any size, a 0-d tensor) decode back to the model as built', () => {
  const g = new GraphBuilder('two', { docString: 'd' });
  const x = g.input('x', [1, 2, 3, 3]);
  const a = g.scope('a');
  const big = seededTensor([4, 2, 3, 3], 3); // 288 bytes: a two-byte length varint
  const y = a.conv(x, a.param('weight', big), a.param('bias', seededTensor([4], 4)));
  g.output('y', g.add(y, g.scope('b').param('shift', { dims: [], data: Float32Array.of(0.5) })));
  const model = g.toModel();
  const decoded = decodeModel(encodeModel(model));
  // Proto3 does not write empty repeated fields, so they decode as absent.
  const plain = (v: unknown) =>
    JSON.parse(JSON.stringify(v, (_, x) => (x instanceof Uint8Array ? Array.from(x) : Array.isArray(x) && x.length === 0 ? undefined : x)));
  assert.deepEqual(
    decoded.graph!.initializer!.map((t) => plain({ ...t, dims: t.dims ?? [] })),
    model.graph!.initializer!.map((t) => plain(t)),
  );
  assert.deepEqual(plain({ ...decoded.graph, initializer: undefined }), plain({ ...model.graph, initializer: undefined }));
  assert.deepEqual([decoded.ir_version, decoded.producer_name, decoded.doc_string], [model.ir_version, model.producer_name, 'd']);
});

test("a model over protobuf's 2 GiB is refused before any buffer is allocated", () => {
  // A stand-in raw_data that only reports its length: the size check comes first.
  const huge = { length: 2 ** 31 } as unknown as Uint8Array;
  assert.throws(
    () => encodeModel({ graph: { name: 'big', initializer: [{ name: 'w', dims: [2 ** 29], data_type: DataType.FLOAT, raw_data: huge }] } }),
    (e: unknown) => e instanceof DistVaeError && e.code === 'UNSUPPORTED' && /2 GiB/.test(e.message),
  );
});
