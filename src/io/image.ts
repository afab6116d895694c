// Images in and out. Out: the family's value mapping (io/sample-range.ts, docs/design.md §9: per
// channel clamp(x·std + mean, 0, 1); 8-bit = round(v·255)) and PNG files through pngjs,
// 8-bit by default or 16-bit on request; a batch or a video becomes one file per image / frame.
// In: PNG (pngjs) and JPEG (jpeg-js) become a float tensor (1, 3, H, W) in [0, 1], as
// torchvision's to_tensor makes it (8-bit v/255, 16-bit PNG v/65535). The format is read from
// the file's signature, never its name. Grey images are replicated to RGB and alpha is dropped
// without compositing — PIL's convert('RGB'), which madebyollin's TAE demo uses. EXIF
// orientation is not applied (PIL's Image.open does not apply it either).

import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import { DistVaeError, reason, refuse } from '../errors.js';
import type { Tensor } from '../tensor.js';
import { readFileBytes, writeFileBytes } from '../bytes/files.js';

import { sampleToImage, type SampleRange } from './sample-range.js';

export { sampleToImage, type SampleRange };

/** The (C, H, W) planes of each image in a (B, C, H, W) or (B, C, F, H, W) tensor, batch-major then frame-major. */
export function imagesOf(t: Tensor): { channels: number; height: number; width: number; frames: Float32Array[] } {
  const d = t.dims;
  if (d.length !== 4 && d.length !== 5) {
    throw new DistVaeError('TENSOR_INVALID', `an image tensor must be (B, C, H, W) or (B, C, F, H, W), got [${d.join(', ')}]`);
  }
  const [b, c] = d as [number, number];
  const f = d.length === 5 ? d[2]! : 1;
  const [h, w] = d.slice(-2) as [number, number];
  if (c !== 1 && c !== 3 && c !== 4) {
    throw new DistVaeError('TENSOR_INVALID', `an image needs 1, 3 or 4 channels, got ${c} (dims [${d.join(', ')}])`);
  }
  const frames: Float32Array[] = [];
  const plane = h * w;
  for (let bi = 0; bi < b; bi++) {
    for (let fi = 0; fi < f; fi++) {
      const img = new Float32Array(c * plane);
      for (let ci = 0; ci < c; ci++) {
        const from = ((bi * c + ci) * f + fi) * plane;
        img.set(t.data.subarray(from, from + plane), ci * plane);
      }
      frames.push(img);
    }
  }
  return { channels: c, height: h, width: w, frames };
}

/** PNG bytes of one (C, H, W) image with values in [0, 1]. */
export function encodePng(image: Float32Array, channels: number, height: number, width: number, bitDepth: 8 | 16 = 8): Uint8Array {
  const png = new PNG({ width, height, bitDepth, colorType: 6, inputColorType: 6, inputHasAlpha: true });
  const max = bitDepth === 16 ? 65535 : 255;
  const plane = height * width;
  const rgba = bitDepth === 16 ? new Uint16Array(plane * 4) : new Uint8Array(plane * 4);
  for (let i = 0; i < plane; i++) {
    for (let k = 0; k < 3; k++) {
      const v = image[(channels === 1 ? 0 : k) * plane + i]!;
      rgba[i * 4 + k] = Math.round(v * max);
    }
    rgba[i * 4 + 3] = channels === 4 ? Math.round(image[3 * plane + i]! * max) : max;
  }
  // pngjs takes 16-bit samples as a Uint16Array in its data slot.
  (png as unknown as { data: Uint8Array | Uint16Array }).data = rgba;
  return PNG.sync.write(png, { bitDepth, colorType: 6, inputColorType: 6, inputHasAlpha: true });
}

/**
 * Writes a decoded sample as PNG: one file for a single image, else `<stem>-<index>.png` per
 * image / frame (zero-padded). Returns the paths written.
 */
export function writeSamplePng(path: string, sample: Tensor, range: SampleRange, options: { bitDepth?: 8 | 16 } = {}): string[] {
  const bitDepth = options.bitDepth ?? 8;
  if (bitDepth !== 8 && bitDepth !== 16) {
    refuse('INVALID_ARGUMENT', reason('BIT_DEPTH', 'bitDepth', bitDepth, '8 or 16'));
  }
  const { channels, height, width, frames } = imagesOf(sampleToImage(sample, range));
  const stem = path.replace(/\.png$/i, '');
  const digits = String(frames.length - 1).length;
  const paths = frames.length === 1 ? [path] : frames.map((_, i) => `${stem}-${String(i).padStart(digits, '0')}.png`);
  frames.forEach((img, i) => writeFileBytes(paths[i]!, encodePng(img, channels, height, width, bitDepth)));
  return paths;
}

// ---- reading ----------------------------------------------------------------------------

/** The image formats `decodeImage` reads. */
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

/** Decodes PNG or JPEG bytes to an image tensor (1, 3, H, W) with values in [0, 1]; other formats are refused, named. */
export function decodeImage(bytes: Uint8Array, source = '<buffer>'): Tensor {
  if (startsWith(bytes, PNG_SIGNATURE)) return decodePng(bytes, source);
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return decodeJpeg(bytes, source);
  const known = OTHER_FORMATS.find((f) => f.test(bytes));
  const what = known ? `a ${known.name} image` : 'not a PNG or JPEG image (unrecognised signature)';
  refuse(
    'FILE_INVALID',
    reason(
      'IMAGE_FORMAT_UNSUPPORTED',
      'image',
      source,
      `a ${READABLE_IMAGE_FORMATS.join(' or ')} file`,
      `${source} is ${what}; images are read from ${READABLE_IMAGE_FORMATS.join(' and ')} files`,
    ),
  );
}

/** The decoder's own words are kept for the cause, not shown: they name its internals. */
function corrupt(source: string, format: string, cause: unknown): never {
  throw new DistVaeError('FILE_INVALID', `${source}: cannot decode the ${format} image: its compressed data is corrupt`, { cause });
}

/**
 * The most pixels an image may declare: 16384² (a 16384² image is 3 GiB as float32 planes).
 * Checked from the header, before anything is decoded.
 */
export const MAX_IMAGE_PIXELS = 16384 * 16384;

function refuseSize(source: string, format: string, width: number, height: number): void {
  if (width >= 1 && height >= 1 && width * height <= MAX_IMAGE_PIXELS) return;
  const r = reason(
    'IMAGE_TOO_LARGE',
    'image',
    `${width}x${height}`,
    `at most ${MAX_IMAGE_PIXELS} pixels (16384 x 16384), each side at least 1`,
    `${source}: the ${format} declares ${width} x ${height} pixels; images of at most ${MAX_IMAGE_PIXELS} pixels (16384 x 16384) are read`,
  );
  throw new DistVaeError('FILE_INVALID', r.message, { reasons: [r] });
}

/**
 * Walks the PNG's chunks before decoding: IHDR first with a size within MAX_IMAGE_PIXELS,
 * every chunk inside the file, an IEND at the end — so a truncated or oversized file is
 * refused in our words, before the decoder allocates anything.
 */
function checkPngStructure(bytes: Uint8Array, source: string): void {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const bad = (what: string): never => {
    throw new DistVaeError('FILE_INVALID', `${source}: not a valid PNG: ${what}`);
  };
  const typeAt = (at: number): string => String.fromCharCode(...bytes.subarray(at, at + 4));
  if (bytes.length < 33 || view.getUint32(8) !== 13 || typeAt(12) !== 'IHDR') bad('the IHDR header is missing or cut short');
  refuseSize(source, 'PNG', view.getUint32(16), view.getUint32(20));
  let at = 8;
  for (;;) {
    if (at + 12 > bytes.length) bad(`the file ends at byte ${bytes.length} without an IEND chunk (truncated?)`);
    const length = view.getUint32(at);
    const type = typeAt(at + 4);
    if (at + 12 + length > bytes.length)
      bad(
        `chunk ${JSON.stringify(type)} at byte ${at} declares ${length} bytes, past the end of the ${bytes.length}-byte file (truncated?)`,
      );
    at += 12 + length;
    if (type === 'IEND') return;
  }
}

function decodePng(bytes: Uint8Array, source: string): Tensor {
  checkPngStructure(bytes, source);
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
  const size = jpegSize(bytes);
  if (size) refuseSize(source, 'JPEG', size.width, size.height);
  let image: { width: number; height: number; data: Uint8Array };
  try {
    image = jpeg.decode(bytes, {
      useTArray: true,
      formatAsRGBA: false,
      maxResolutionInMP: MAX_IMAGE_PIXELS / 1e6,
      maxMemoryUsageInMB: 4096,
    });
  } catch (e) {
    corrupt(source, 'JPEG', e);
  }
  return planarRgb(image.data, image.width, image.height, 3, 255);
}

/** Width and height from the first start-of-frame marker, or null when none is found (the decoder then refuses it). */
function jpegSize(bytes: Uint8Array): { width: number; height: number } | null {
  let at = 2;
  while (at + 9 < bytes.length) {
    if (bytes[at] !== 0xff) return null;
    const marker = bytes[at + 1]!;
    const length = (bytes[at + 2]! << 8) | bytes[at + 3]!;
    // SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC).
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { height: (bytes[at + 5]! << 8) | bytes[at + 6]!, width: (bytes[at + 7]! << 8) | bytes[at + 8]! };
    }
    at += 2 + length;
  }
  return null;
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
