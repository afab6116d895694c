// The time axis of a decoder that runs on fixed clips of latent frames (MiniMax-H3's `_decode`):
// the clip geometry a config implies and, for T latent frames, the padded length, the clips'
// starts and the output frame count — pure arithmetic on declared numbers, read by the planner
// (sample ↔ latent frames) and by the family's runner (the loop itself), so both count alike.

/**
 * How a clip-decoding class chunks time, as it derives it from `clip_length` and `token_drop`:
 * clips of `chunk + context` latent frames every `chunk`, each decoded to `(chunk + context)·rt`
 * frames of which the first `prePadding` are dropped; a clip keeps `chunk·rt − prePadding` frames,
 * the first `blend` cross-faded with the previous clip's raw tail.
 */
export interface ClipGeometry {
  /** `tokens_chunk_size` = ⌈clip_length / rt⌉ latent frames per clip step. */
  chunk: number;
  /** `token_overlap` = (−token_drop) mod chunk: extra latent frames each clip decodes past its step. */
  context: number;
  /** `token_drop`: latent frames the encoder dropped from every clip. */
  tokenDrop: number;
  /** `frame_pre_padding` = (−clip_length) mod rt: leading frames of every decoded clip that are dropped. */
  prePadding: number;
  /** `frame_overlap` = max(context·rt − prePadding, 0): frames cross-faded between clips. */
  blend: number;
  clipLength: number;
  temporalRatio: number;
}

const mod = (a: number, m: number) => ((a % m) + m) % m;

/** The clip geometry of `clip_length`, `token_drop` and the temporal ratio rt. */
export function clipGeometry(clipLength: number, tokenDrop: number, rt: number): ClipGeometry {
  const chunk = Math.ceil(clipLength / rt);
  const context = mod(-tokenDrop, chunk);
  const prePadding = mod(-clipLength, rt);
  return { chunk, context, tokenDrop, prePadding, blend: Math.max(context * rt - prePadding, 0), clipLength, temporalRatio: rt };
}

/**
 * The clips decoded for T latent frames: the length after repeating the last frame, each clip's
 * start, the frames the loop yields after the repeated frames' ones are cut (`outFrames`: 1 +
 * 4(T−1) − 3⌊(T−1)/5⌋ for MiniMax-H3's published config) and how many were cut. Null where the
 * loop runs no clip (T + token_drop ≤ chunk, e.g. T = 2 there): the class raises.
 */
export function clipPlan(
  clip: ClipGeometry,
  latentFrames: number,
): { padded: number; starts: number[]; outFrames: number; trimmed: number } | null {
  const { chunk, context, tokenDrop, prePadding, temporalRatio: rt } = clip;
  const tokens = latentFrames + tokenDrop;
  const pad = mod(-tokens, chunk);
  const clips = (tokens + pad) / chunk - (tokenDrop > 0 ? 1 : 0);
  if (!Number.isInteger(latentFrames) || latentFrames < 1 || clips < 1) return null;
  const padded = latentFrames + pad;
  const starts = Array.from({ length: clips }, (_, i) => i * chunk);
  // Frames a clip yields: its first step less the pre-padding; the last clip's tail is appended too.
  const decoded = (start: number) => (Math.min(padded, start + chunk + context) - start) * rt;
  let produced = 0;
  for (const s of starts) produced += Math.max(0, Math.min(decoded(s), chunk * rt) - prePadding);
  if (tokenDrop > 0) produced += Math.max(0, Math.min(decoded(starts[clips - 1]!), 2 * chunk * rt) - chunk * rt - prePadding);
  // The repeated latent frames' frames are cut again: a clip's last latent frame covers clip_length mod rt frames.
  const tail = clip.clipLength % rt;
  let trimmed = 0;
  for (let k = 0; k < pad; k++) trimmed += tail && (latentFrames + k) % chunk === 0 ? tail : rt;
  return { padded, starts, outFrames: produced - trimmed, trimmed };
}

/** Output frames of T latent frames (null where the class decodes none). */
export function clipOutputFrames(clip: ClipGeometry, latentFrames: number): number | null {
  return clipPlan(clip, latentFrames)?.outFrames ?? null;
}
