// A refused request's reasons as an HTML table (code, field, value, valid, message): the same
// table on the pages (built in Node) and in the explorer (in the browser), so it stays pure.

import { escapeXml } from '../../src/bench/plan-figure.js';
import type { Reason } from '../../src/errors.js';

export function reasonsTableHtml(reasons: readonly Reason[], caption?: string): string {
  const cell = (text: string, code = false) => `<td>${code ? `<code>${escapeXml(text)}</code>` : escapeXml(text)}</td>`;
  const rows = reasons.map(
    (r) =>
      `<tr>${cell(r.code, true)}${cell(r.field, true)}${cell(JSON.stringify(r.value) ?? String(r.value), true)}${cell(r.valid)}${cell(r.message)}</tr>`,
  );
  const head = ['code', 'field', 'value', 'valid', 'message'].map((h) => `<th scope="col">${h}</th>`).join('');
  return `<div class="table-scroll"><table class="reasons">${caption ? `<caption>${escapeXml(caption)}</caption>` : ''}<thead><tr>${head}</tr></thead><tbody>${rows.join('')}</tbody></table></div>`;
}
