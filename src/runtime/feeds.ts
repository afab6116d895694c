// The feeds of a session run, checked before onnxruntime sees them: exactly the graph's inputs,
// each a Float32Array holding as many elements as its dims say. Pure, so the Node session
// (session.ts) and the page session (web-session.ts) refuse bad feeds with the same words.

import { invalidArgument } from '../errors.js';
import { elementCount, type Tensor } from '../tensor.js';

/** Refuses (INVALID_ARGUMENT) feeds that are not exactly `inputNames`, or a feed whose data does not match its dims. */
export function checkFeeds(inputNames: readonly string[], feeds: Readonly<Record<string, Tensor>>): void {
  const given = Object.keys(feeds);
  const missing = inputNames.filter((n) => !(n in feeds));
  const unknown = given.filter((n) => !inputNames.includes(n));
  if (missing.length > 0 || unknown.length > 0) {
    invalidArgument(
      'feeds',
      given,
      `exactly the graph inputs [${inputNames.join(', ')}]` +
        (missing.length ? `; missing ${missing.join(', ')}` : '') +
        (unknown.length ? `; unknown ${unknown.join(', ')}` : ''),
    );
  }
  for (const name of inputNames) {
    const t = feeds[name]!;
    if (!(t.data instanceof Float32Array)) invalidArgument(`feeds.${name}.data`, typeof t.data, 'a Float32Array');
    const n = elementCount(t.dims);
    if (t.data.length !== n) invalidArgument(`feeds.${name}.data.length`, t.data.length, `${n} elements for dims [${t.dims.join(', ')}]`);
  }
}
