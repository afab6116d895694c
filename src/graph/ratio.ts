// Exact positive rationals for the arithmetic of resolutions and halos: a value's scale (its rows
// per latent row: 8 after three 2× upsamplers, 1/2 after a stride-2 conv) and halos measured in
// latent rows. Floats would round 1/3 and lose exactness of band boundaries; these stay integers.

export interface Ratio {
  readonly num: number;
  readonly den: number;
}

function gcd(a: number, b: number): number {
  a = Math.abs(a);
  b = Math.abs(b);
  while (b) [a, b] = [b, a % b];
  return a;
}

function lcm(a: number, b: number): number {
  return (a / gcd(a, b)) * b;
}

export function ratio(num: number, den = 1): Ratio {
  if (!Number.isSafeInteger(num) || !Number.isSafeInteger(den) || den <= 0)
    throw new RangeError(`ratio ${num}/${den} needs integers and a positive denominator`);
  const g = gcd(num, den) || 1;
  return { num: num / g, den: den / g };
}

export const ONE: Ratio = ratio(1);
export const ZERO: Ratio = ratio(0);

export function mulRatio(a: Ratio, b: Ratio): Ratio {
  return ratio(a.num * b.num, a.den * b.den);
}

export function divRatio(a: Ratio, b: Ratio): Ratio {
  return ratio(a.num * b.den, a.den * b.num);
}

export function compareRatio(a: Ratio, b: Ratio): number {
  return a.num * b.den - b.num * a.den;
}

export function maxRatio(a: Ratio, b: Ratio): Ratio {
  return compareRatio(a, b) >= 0 ? a : b;
}

export function equalRatio(a: Ratio, b: Ratio): boolean {
  return a.num === b.num && a.den === b.den;
}

export function isInteger(a: Ratio): boolean {
  return a.den === 1;
}

/** `count` units of `r` as an integer; throws when it is not whole (a caller's arithmetic error). */
export function wholeTimes(count: number, r: Ratio): number {
  const v = count * r.num;
  if (v % r.den !== 0) throw new RangeError(`${count} × ${formatRatio(r)} is not a whole number`);
  return v / r.den;
}

/**
 * The smallest h ≥ `value` such that h·s is a whole number for every scale s: halos in latent
 * units that land on whole rows of every value they are cut from.
 */
export function ceilToWholeRows(value: Ratio, scales: readonly Ratio[]): Ratio {
  // h·(n/d) ∈ ℤ for all s ⇔ h is a multiple of lcm(d)/gcd(n).
  let dens = 1;
  let nums = 0;
  for (const s of scales) {
    dens = lcm(dens, s.den);
    nums = gcd(nums, s.num);
  }
  const unit = ratio(dens, nums || 1);
  const a = Math.max(0, value.num * unit.den);
  const b = value.den * unit.num;
  const k = Math.floor((a + b - 1) / b);
  return ratio(k * unit.num, unit.den);
}

/** A ratio as text: `3`, or `3/2`. */
export function formatRatio(r: Ratio): string {
  return r.den === 1 ? String(r.num) : `${r.num}/${r.den}`;
}
