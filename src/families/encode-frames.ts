// How a video encoder maps input frames to latent frames, declared as data by the family's
// encoder (FamilyEncoder.frames) and read by the encode engine and the input checks — never a
// family name. Each kind is one of diffusers' `_encode` loops:
//
// - 'causal' (HunyuanVideo, LTX, HunyuanVideo 1.5: one causal 3-D pass): F = 1 + rt·k input
//   frames give 1 + (F − 1)/rt latent frames; other counts are refused.
// - 'first-then-chunks' (Wan, Qwen-Image: the first frame alone, then chunks of `chunk` frames
//   through a causal feature cache): F = 1 + chunk·k give 1 + k·(chunk/rt); diffusers silently
//   drops frames past the last whole chunk, we refuse them instead.
// - 'clips' (MiniMax-H3: clips of `clipLength` frames, the last padded by repeating its last
//   frame, `tokenDrop` trailing latent frames dropped): any F ≥ 1; F = 1 encodes alone to one
//   latent frame, otherwise ⌈F/clip⌉·⌈clip/rt⌉ − drop.

/** A video encoder's frame loop (see the header); absent on image encoders, which take (B, C, H, W). */
export type EncodeFrames =
  { kind: 'causal' } | { kind: 'first-then-chunks'; chunk: number } | { kind: 'clips'; clipLength: number; tokenDrop: number };

/** The input frame counts an encoder takes: 1 + step·k (k ≥ 0), or any count ≥ 1 (step 1). */
export function encodeFrameStep(frames: EncodeFrames, temporalRatio: number): number {
  switch (frames.kind) {
    case 'causal':
      return temporalRatio;
    case 'first-then-chunks':
      return frames.chunk;
    case 'clips':
      return 1;
  }
}

/** Latent frames of `inputFrames` (a count `encodeFrameStep` accepts: check first). */
export function encodedFrames(frames: EncodeFrames, temporalRatio: number, inputFrames: number): number {
  const f = inputFrames;
  switch (frames.kind) {
    case 'causal':
      return 1 + (f - 1) / temporalRatio;
    case 'first-then-chunks':
      return 1 + ((f - 1) / frames.chunk) * (frames.chunk / temporalRatio);
    case 'clips':
      return f === 1 ? 1 : Math.ceil(f / frames.clipLength) * Math.ceil(frames.clipLength / temporalRatio) - frames.tokenDrop;
  }
}

/** Why `inputFrames` cannot be encoded (naming the valid form and the nearest counts), or null. */
export function encodeFramesProblem(frames: EncodeFrames, temporalRatio: number, inputFrames: number): string | null {
  const step = encodeFrameStep(frames, temporalRatio);
  const f = inputFrames;
  if (Number.isInteger(f) && f >= 1 && (f - 1) % step === 0) return null;
  if (!Number.isInteger(f) || f < 1) return `${f} frames: the encoder takes 1 + ${step}·k frames (k ≥ 0)`;
  const below = f - ((f - 1) % step);
  return `${f} frames is not of the form 1 + ${step}·k (nearest: ${below} or ${below + step}); trim the video to one of them`;
}
