// The readable text form of a model: one line per graph input, initializer, node and output, so
// anyone can see what a built graph computes without opening the bytes. It is a function of the
// ModelProto alone, which makes it work equally on a builder's model and on decoded bytes (the
// round-trip test compares the two). Small tensors (≤ 16 elements: shapes, axes, scalars) are
// printed with their values, larger ones by type and shape. A Constant node that is small or
// uniform gets no line of its own: its literal is printed where it is used, e.g.
// `Reshape(h, int64[3]{0,32,-1})` or `float32[512]{all 1}`. Sync regions (sync.ts) close the
// dump, one line each: kind, module, inputs → output, node count.

import { elementCount } from '../tensor.js';
import {
  AttributeType,
  type AttributeProto,
  type ModelProto,
  type NodeProto,
  type TensorProto,
  type ValueInfoProto,
} from './onnx-proto.js';
import { regionInputs, syncRegionsOf } from './sync.js';
import { dataTypeName, tensorProtoValues } from './tensor-proto.js';

const INLINE_VALUES_MAX = 16;

/** Shortest decimal that reads back as the same float32. */
export function formatFloat32(v: number): string {
  if (!Number.isFinite(v) || Number.isInteger(v)) return String(v);
  for (let p = 1; p < 9; p++) {
    const s = Number(v.toPrecision(p));
    if (Math.fround(s) === Math.fround(v)) return String(s);
  }
  return String(Math.fround(v));
}

function formatTensorType(t: TensorProto): string {
  return `${dataTypeName(t.data_type)}[${(t.dims ?? []).join(',')}]`;
}

function formatTensor(t: TensorProto): string {
  const type = formatTensorType(t);
  if (elementCount(t.dims ?? []) > INLINE_VALUES_MAX) return type;
  return `${type}{${tensorProtoValues(t).map(formatFloat32).join(',')}}`;
}

function formatValueInfo(v: ValueInfoProto): string {
  const tensorType = v.type?.tensor_type;
  if (!tensorType) return `${v.name ?? ''} (type not declared)`;
  if (!tensorType.shape) return `${v.name ?? ''} ${dataTypeName(tensorType.elem_type)} (shape not declared)`;
  const dims = (tensorType.shape.dim ?? []).map((d) => d.dim_param ?? String(d.dim_value ?? 0));
  return `${v.name ?? ''} ${dataTypeName(tensorType.elem_type)}[${dims.join(',')}]`;
}

/** Values of small or uniform Constant nodes, keyed by output name, formatted as literals. */
function inlineConstants(nodes: readonly NodeProto[]): Map<string, string> {
  const literals = new Map<string, string>();
  for (const node of nodes) {
    const value = node.attribute?.find((a) => a.name === 'value')?.t;
    const output = node.output?.[0];
    if (node.op_type !== 'Constant' || node.domain || !value || !output) continue;
    if (elementCount(value.dims ?? []) <= INLINE_VALUES_MAX) {
      literals.set(output, formatTensor(value));
      continue;
    }
    const values = tensorProtoValues(value);
    if (values.every((v) => v === values[0])) literals.set(output, `${formatTensorType(value)}{all ${formatFloat32(values[0]!)}}`);
  }
  return literals;
}

function formatAttribute(a: AttributeProto): string {
  const decoder = new TextDecoder();
  let value: string;
  switch (a.type) {
    case AttributeType.FLOAT:
      value = formatFloat32(a.f ?? 0);
      break;
    case AttributeType.INT:
      value = String(a.i ?? 0);
      break;
    case AttributeType.STRING:
      value = JSON.stringify(decoder.decode(a.s ?? new Uint8Array()));
      break;
    case AttributeType.TENSOR:
      value = a.t ? formatTensor(a.t) : '?';
      break;
    case AttributeType.FLOATS:
      value = `[${(a.floats ?? []).map(formatFloat32).join(',')}]`;
      break;
    case AttributeType.INTS:
      value = `[${(a.ints ?? []).join(',')}]`;
      break;
    case AttributeType.STRINGS:
      value = `[${(a.strings ?? []).map((s) => JSON.stringify(decoder.decode(s))).join(',')}]`;
      break;
    default:
      value = `<attribute type ${a.type ?? 0}>`;
  }
  return `${a.name ?? ''}=${value}`;
}

/** The text dump of a model (see the module header for the format). */
export function dumpModel(model: ModelProto): string {
  const graph = model.graph ?? {};
  const opsets = (model.opset_import ?? []).map((o) => `${o.domain || 'ai.onnx'} ${o.version ?? 0}`).join(', ');
  const lines = [
    `model ir_version=${model.ir_version ?? 0} opset=[${opsets}] producer=${model.producer_name ?? ''}`,
    `graph ${graph.name ?? ''}`,
  ];
  for (const input of graph.input ?? []) lines.push(`input  ${formatValueInfo(input)}`);
  for (const init of graph.initializer ?? []) lines.push(`init   ${init.name ?? ''} ${formatTensor(init)}`);
  const literals = inlineConstants(graph.node ?? []);
  for (const node of graph.node ?? []) {
    if (literals.has(node.output?.[0] ?? '')) continue;
    const op = node.domain ? `${node.domain}.${node.op_type ?? ''}` : (node.op_type ?? '');
    const inputs = (node.input ?? []).map((i) => literals.get(i) ?? (i || '_')).join(', ');
    const outputs = (node.output ?? []).join(', ');
    const named = node.name && node.name !== node.output?.[0] ? `[${node.name}] ` : '';
    const attributes = (node.attribute ?? []).map(formatAttribute).join(' ');
    lines.push(`node   ${named}${outputs} = ${op}(${inputs})${attributes ? ' ' + attributes : ''}`);
  }
  for (const output of graph.output ?? []) lines.push(`output ${formatValueInfo(output)}`);
  for (const r of syncRegionsOf(model))
    lines.push(`sync   ${r.kind} ${r.name}: ${regionInputs(r).join(', ')} -> ${r.output} (${r.nodes.length} nodes)`);
  return lines.join('\n') + '\n';
}
