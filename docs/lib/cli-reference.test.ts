import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { commandsFromHelp, readCliHelp, renderCli } from './cli-reference.js';

const dir = mkdtempSync(join(tmpdir(), 'distvae-cli-'));
after(() => rmSync(dir, { recursive: true }));

test('command names come from the "Commands:" section of the top-level help', () => {
  const help = [
    'Usage: distvae <command> [options]',
    '',
    'Commands:',
    '  plan      Plan a tiled decode',
    '  bucket    Choose a resolution bucket',
    '  decode    Decode latents',
    '',
    'Options:',
    '  --help    Show help',
    '  version   not a command: outside the section',
  ].join('\n');
  assert.deepEqual(commandsFromHelp(help), ['plan', 'bucket', 'decode']);
  assert.deepEqual(commandsFromHelp('distvae: no sections at all\n  plan  x'), []);
});

test('without the CLI source the page says so instead of guessing', async () => {
  const help = await readCliHelp(dir);
  assert.deepEqual(help, { top: null, commands: [] });
  assert.match(renderCli(help), /is not part of this build yet/);
});

test('help text is shown verbatim and escaped, one section per command', () => {
  const html = renderCli({ top: 'Commands:\n  plan  <H>x<W>', commands: [{ name: 'plan', help: 'distvae plan --window <HxW>' }] });
  assert.match(html, /<section id="cli-plan"><h2><code>distvae plan<\/code><\/h2><pre class="cli-help"><code>distvae plan --window &lt;HxW&gt;<\/code><\/pre><\/section>/);
  assert.match(html, /<a href="#cli-plan">/);
});
