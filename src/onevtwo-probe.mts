// Full-size TAEF2 encode: whole vs row-sharded on 1 rank (float64-merged statistics, no halos) vs 2 ranks.
import { sliceLatent } from './decode/latents.js';
import { loadEncoder } from './encode/encoder.js';
import { readImage } from './io/image.js';
import { maxAbsDiff } from './io/quality.js';
import { setTiling } from './plan/planner.js';
import { localGroup } from './ranks/local/index.js';
import { useStrategy } from './strategies/index.js';
const photo = sliceLatent(readImage('/work/shared/data/photo-2048x768.jpg'), { y0: 64, y1: 768, x0: 96, x1: 2016 });
const enc = await loadEncoder('/work/shared/models/taef2/taef2_encoder.pth', { family: 'tae', threads: 1 });
setTiling(enc, 'off');
const whole = await enc.encode(photo);
const peak = whole.data.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
const out: Record<string, number> = { peak };
const zs = [];
for (const r of [1, 2]) {
  const g = localGroup({ ranks: r, isolation: 'thread', threadsPerRank: 1 });
  useStrategy(enc, 'shard', g);
  const z = await enc.encode(photo);
  zs.push(z);
  out[`shard${r}VsWhole`] = maxAbsDiff(z, whole);
  useStrategy(enc, 'tile', null);
  await g.close();
}
out['shard1VsShard2'] = maxAbsDiff(zs[0]!, zs[1]!);
console.log(JSON.stringify(out));
await enc.dispose();
