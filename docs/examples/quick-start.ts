// Quick start: plan a tiled decode of a 1024 × 1536 image over 3 ranks, print what the plan
// does, then ask the plan search for alternatives. Everything here is pure planning: no model
// is loaded and nothing is decoded.
import { DistVaeError, planningVae, planReport, searchPlans, setTiling } from 'distvae';
import { explainTileOverlapPlan, explainTileShapePlan, tileOverlapPlan, tileShapePlan } from 'distvae/plan';

// 1. A VAE for planning: a family name, or a diffusers config.json whose _class_name names it.
const vae = planningVae('autoencoder-kl');
const sampleShape = { height: 1024, width: 1536 };

// 2. The window, in output pixels, exactly as requested: null when refused, never rounded.
const shape = tileShapePlan(vae, 512, 512, { sampleShape });
if (!shape) {
  const reasons = explainTileShapePlan(vae, 512, 512, { sampleShape });
  throw new DistVaeError('PLAN_REFUSED', 'window refused', { reasons });
}
setTiling(vae, shape);

// 3. The overlap, validated against the window now installed on the VAE.
const overlap = tileOverlapPlan(vae, 128, 128, { sampleShape });
if (!overlap) {
  const reasons = explainTileOverlapPlan(vae, 128, 128, { sampleShape });
  throw new DistVaeError('PLAN_REFUSED', 'overlap refused', { reasons });
}
setTiling(vae, overlap);

// 4. What the installed plan does on this image over 3 ranks: tiles, metrics, schedule.
const report = planReport(vae, sampleShape, 3);
const ratio = report.decodedAreaRatio.toFixed(3);
const imbalance = (report.imbalance * 100).toFixed(1);
console.log(`${report.tiles} tiles (${report.rows} × ${report.columns}), decoded-area ratio ${ratio}, imbalance ${imbalance}%`);
for (const rank of report.ranks) {
  console.log(`rank ${rank.rank}: tiles ${rank.tiles.join(', ')} (load ${rank.load})`);
}

// 5. Alternatives from the plan search: coarse, balanced and fine windows (geometry, not speed).
const { picks } = searchPlans(planningVae('autoencoder-kl'), sampleShape, 3);
for (const [name, pick] of Object.entries(picks)) {
  if (!pick) continue;
  const { window: w, overlap: o } = pick;
  console.log(`${name}: window ${w.height}x${w.width}, overlap ${o.height}x${o.width}, ${pick.tiles} tiles`);
}
