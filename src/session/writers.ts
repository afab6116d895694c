// The outputs of a decode: a single image to PNG and any image batch to .npy band by band as
// tile rows finish (memory independent of the height), video to ffmpeg chunk by chunk where the
// family decodes in temporal chunks, anything else from the whole sample. Nothing is left at the
// output path when the decode fails; non-finite output fails the decode where each piece is
// assembled (tile/finite.ts), so the writers do not scan it again.

import { extname } from 'node:path';
import type { Tensor } from '../tensor.js';
import { DISTVAE_VERSION } from '../version.js';
import { decodeToBands, decodeToFrames } from '../decode/engine.js';
import { throwIfAborted } from '../errors.js';
import type { DecodeOptions } from '../decode/types.js';
import type { Vae } from '../decode/vae.js';
import { writeSamplePng } from '../io/image.js';
import { writeNpy } from '../io/npy.js';
import { NpyBandWriter } from '../io/npy-stream.js';
import { PngBandWriter } from '../io/png-stream.js';
import { isVideoPath, VideoFrameWriter, writeSampleVideo } from '../io/video.js';
import { outputFramesOf } from '../plan/shapes.js';

/** How an output is written: PNG bit depth and video frame rate. */
export interface OutputSettings {
  bitDepth: 8 | 16;
  fps: number | undefined;
}

/** What writing an output gives: the decoded sample's shape and the files written. */
export interface Written {
  sample: { dims: readonly number[] };
  files: string[];
}

/** Decodes `latents` with the installed plan straight into `out`, band by band or chunk by chunk where the output allows. */
export async function decodeInto(
  vae: Vae,
  latents: Tensor,
  out: string,
  settings: OutputSettings,
  options: DecodeOptions,
): Promise<Written> {
  const ext = extname(out).toLowerCase();
  // (streamsBands says the same for the memory model: tiles of a streamed decode are dealt round-robin.)
  if (ext === '.png' && !vae.geometry.fiveDimLatents && latents.dims[0] === 1)
    return { sample: await writeStreamedPng(vae, latents, out, settings.bitDepth, options), files: [out] };
  if (ext === '.npy' && !vae.geometry.fiveDimLatents) return { sample: await writeStreamedNpy(vae, latents, out, options), files: [out] };
  // Video goes to ffmpeg chunk by chunk where the family decodes in temporal chunks; a plan of
  // one chunk (or a family whose tiles span every frame) hands over the whole sample at once.
  if (isVideoPath(out)) return writeStreamedVideo(vae, latents, out, settings.fps, options);
  const whole = await vae.decode(latents, options);
  return { sample: whole, files: await writeWhole(vae, out, whole, settings, options.signal) };
}

/** Writes a whole sample as the output's extension asks: .npy, a video, or PNGs. */
export async function writeWhole(vae: Vae, out: string, whole: Tensor, settings: OutputSettings, signal?: AbortSignal): Promise<string[]> {
  throwIfAborted(signal);
  const { fps } = settings;
  if (extname(out).toLowerCase() === '.npy') {
    writeNpy(out, whole);
    return [out];
  }
  if (isVideoPath(out))
    return await writeSampleVideo(out, whole, vae.family.sampleRange, {
      ...(fps !== undefined ? { fps } : {}),
      ...(signal ? { signal } : {}),
    });
  return writeSamplePng(out, whole, vae.family.sampleRange, { bitDepth: settings.bitDepth });
}

/**
 * Decodes one image into a PNG written band by band, with the plan, the distvae version and the
 * VAE's content hash in its text chunks.
 */
async function writeStreamedPng(
  vae: Vae,
  latents: Tensor,
  out: string,
  bitDepth: 8 | 16,
  options: DecodeOptions,
): Promise<{ dims: number[] }> {
  const text = {
    'distvae:plan': JSON.stringify({ enabled: vae.tiling.enabled, window: vae.tiling.window, overlap: vae.tiling.overlap }),
    'distvae:version': DISTVAE_VERSION,
    'distvae:vae-sha256': vae.contentHash(),
  };
  return decodeIntoBands(
    vae,
    latents,
    options,
    (band, height) =>
      new PngBandWriter(out, { width: band.dims[3]!, height, channels: band.dims[1]!, bitDepth, range: vae.family.sampleRange, text }),
  );
}

/** Decodes image latents into an .npy written band by band (the raw decode(z).sample). */
async function writeStreamedNpy(vae: Vae, latents: Tensor, out: string, options: DecodeOptions): Promise<{ dims: number[] }> {
  const batch = latents.dims[0]!;
  return decodeIntoBands(
    vae,
    latents,
    options,
    (band, height) => new NpyBandWriter(out, { dims: [batch, band.dims[1]!, height, band.dims[3]!] }),
  );
}

/** A file written band by band (PngBandWriter, NpyBandWriter). */
interface BandWriter {
  writeBand(band: Tensor): void;
  finish(): void;
  abort(): void;
}

/**
 * Decodes image latents band by band into the writer `open` makes from the first band (and the
 * sample's height); the writer is aborted (its file never appears) when the decode fails.
 */
async function decodeIntoBands(
  vae: Vae,
  latents: Tensor,
  options: DecodeOptions,
  open: (band: Tensor, sampleHeight: number) => BandWriter,
): Promise<{ dims: number[] }> {
  const [, , latentHeight, latentWidth] = latents.dims as number[];
  let writer: BandWriter | null = null;
  try {
    const result = await decodeToBands(
      vae,
      latents,
      (_y0, band) => {
        writer ??= open(band, (latentHeight! * band.dims[3]!) / latentWidth!);
        writer.writeBand(band);
      },
      options,
    );
    writer!.finish();
    return result;
  } catch (e) {
    (writer as BandWriter | null)?.abort();
    throw e;
  }
}

/** Decodes video latents into video files fed to ffmpeg as each temporal chunk is assembled. */
async function writeStreamedVideo(
  vae: Vae,
  latents: Tensor,
  out: string,
  fps: number | undefined,
  options: DecodeOptions,
): Promise<Written> {
  const [batch, , latentFrames] = latents.dims as number[];
  let writer: VideoFrameWriter | null = null;
  try {
    const result = await decodeToFrames(
      vae,
      latents,
      async (_t0, frames) => {
        const [, channels, , height, width] = frames.dims as number[];
        const shape = {
          batch: batch!,
          channels: channels!,
          frames: outputFramesOf(vae.geometry, latentFrames!),
          height: height!,
          width: width!,
        };
        writer ??= new VideoFrameWriter(out, shape, vae.family.sampleRange, {
          ...(fps !== undefined ? { fps } : {}),
          ...(options.signal ? { signal: options.signal } : {}),
        });
        await writer.writeFrames(frames);
      },
      options,
    );
    return { sample: result, files: await writer!.finish() };
  } catch (e) {
    await (writer as VideoFrameWriter | null)?.abort();
    throw e;
  }
}
