// Image files in: PNG (pngjs) and JPEG (jpeg-js) become a float tensor (1, 3, H, W) in [0, 1],
// as torchvision's to_tensor makes it (8-bit v/255, 16-bit PNG v/65535). The format is read
// from the file's signature, never its name. Grey images are replicated to RGB and alpha is
// dropped without compositing — PIL's convert('RGB'), which madebyollin's TAE demo uses. EXIF
// orientation is not applied (PIL's Image.open does not apply it either).

import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import { DistVaeError, reason } from '../errors.js';
import type { Tensor } from '../tensor.js';
import { readFileBytes } from './files.js';

export const READABLE_IMAGE_FORMATS = ['PNG', 'JPEG'] as const;

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
/** Byte offset of the bit depth in a PNG: signature (8), IHDR length and type (8), width and height (8). */
const PNG_BIT_DEPTH_OFFSET = 24;

function startsWith(bytes: Uint8Array, prefix: readonly number[], at = 0): boolean {
  return prefix.every((b, i) => bytes[at + i] === b);
}

const ascii = (text: string): number[] => [...text].map((c) => c.charCodeAt(0));

/** Formats recognised only to name them in a refusal. */
const OTHER_FORMATS: { name: string; test: (b: Uint8Array) => boolean }[] = [
  { name: 'GIF', test: (b) => startsWith(b, ascii('GIF8')) },
  { name: 'WebP', test: (b) => startsWith(b, ascii('RIFF')) && startsWith(b, ascii('WEBP'), 8) },
  { name: 'BMP', test: (b) => startsWith(b, ascii('BM')) },
  { name: 'TIFF', test: (b) => startsWith(b, [0x49, 0x49, 0x2a, 0x00]) || startsWith(b, [0x4d, 0x4d, 0x00, 0x2a]) },
  { name: 'AVIF/HEIF', test: (b) => startsWith(b, ascii('ftyp'), 4) },
];

/** Reads a PNG or JPEG file into a (1, 3, H, W) tensor in [0, 1]. */
export function readImage(path: string): Tensor {
  return decodeImage(readFileBytes(path), path);
}

export function decodeImage(bytes: Uint8Array, source = '<buffer>'): Tensor {
  if (startsWith(bytes, PNG_SIGNATURE)) return decodePng(bytes, source);
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return decodeJpeg(bytes, source);
  const known = OTHER_FORMATS.find((f) => f.test(bytes));
  const what = known ? `a ${known.name} image` : 'not a PNG or JPEG image (unrecognised signature)';
  const r = reason('IMAGE_FORMAT_UNSUPPORTED', 'image', source, `a ${READABLE_IMAGE_FORMATS.join(' or ')} file`, `${source} is ${what}; images are read from ${READABLE_IMAGE_FORMATS.join(' and ')} files`);
  throw new DistVaeError('FILE_INVALID', r.message, { reasons: [r] });
}

function corrupt(source: string, format: string, cause: unknown): never {
  throw new DistVaeError('FILE_INVALID', `${source}: cannot decode the ${format} image: ${(cause as Error)?.message ?? String(cause)}`, { cause });
}

function decodePng(bytes: Uint8Array, source: string): Tensor {
  // 16-bit samples are kept as they are (pngjs would round them to 8 bits); all others arrive as 8-bit RGBA.
  const sixteen = bytes[PNG_BIT_DEPTH_OFFSET] === 16;
  let png: { width: number; height: number; data: ArrayLike<number> };
  try {
    png = PNG.sync.read(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), { skipRescale: sixteen });
  } catch (e) {
    corrupt(source, 'PNG', e);
  }
  return planarRgb(png.data, png.width, png.height, 4, sixteen ? 65535 : 255);
}

function decodeJpeg(bytes: Uint8Array, source: string): Tensor {
  let image: { width: number; height: number; data: Uint8Array };
  try {
    image = jpeg.decode(bytes, { useTArray: true, formatAsRGBA: false });
  } catch (e) {
    corrupt(source, 'JPEG', e);
  }
  return planarRgb(image.data, image.width, image.height, 3, 255);
}

/** Interleaved pixels (RGB or RGBA, `stride` values each) → planes R, G, B divided by `max`. */
function planarRgb(pixels: ArrayLike<number>, width: number, height: number, stride: number, max: number): Tensor {
  const n = width * height;
  const data = new Float32Array(3 * n);
  for (let c = 0; c < 3; c++) {
    for (let i = 0; i < n; i++) data[c * n + i] = pixels[i * stride + c]! / max;
  }
  return { dims: [1, 3, height, width], data };
}
