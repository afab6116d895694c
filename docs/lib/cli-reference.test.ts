import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
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
  assert.deepEqual(
    commandsFromHelp('Usage: distvae <command> [options]\n  x  y\nCOMMANDS\n  distvae plan [options]   Plan\n  distvae bench   Measure'),
    ['plan', 'bench'],
  );
});

test('without the CLI source the page says so instead of guessing', async () => {
  const help = await readCliHelp(dir);
  assert.deepEqual(help, { top: null, commands: [] });
  assert.match(renderCli(help), /is not part of this build yet/);
});

test('help text is shown verbatim and escaped, one section per command', () => {
  const html = renderCli({ top: 'Commands:\n  plan  <H>x<W>', commands: [{ name: 'plan', help: 'distvae plan --window <HxW>' }] });
  assert.match(
    html,
    /<section id="cli-plan"><h2><code>distvae plan<\/code><\/h2><pre class="cli-help"><code>distvae plan --window &lt;HxW&gt;<\/code><\/pre><\/section>/,
  );
  assert.match(html, /<a href="#cli-plan">/);
});

test("with a CLI, the top-level help names the commands and each command's own help is captured", async () => {
  const root = join(dir, 'repo');
  mkdirSync(join(root, 'src/cli'), { recursive: true });
  // The build runs the CLI with tsx from the repository's node_modules.
  symlinkSync(resolve(dirname(fileURLToPath(import.meta.url)), '../../node_modules'), join(root, 'node_modules'));
  writeFileSync(
    join(root, 'src/cli/main.ts'),
    [
      'const [command, flag] = process.argv.slice(2);',
      "const top = 'Usage: distvae <command>\\n\\nCommands:\\n  plan    Plan a decode\\n  ghost   Listed but unknown\\n';",
      "if (command === '--help') console.log(top);",
      "else if (command === 'plan' && flag === '--help') console.log('Usage: distvae plan --window <HxW>');",
      'else { console.error(`unknown command ${command}`); process.exit(2); }',
    ].join('\n'),
  );
  const help = await readCliHelp(root);
  assert.match(help.top!, /^Usage: distvae <command>/);
  assert.deepEqual(help.commands, [{ name: 'plan', help: 'Usage: distvae plan --window <HxW>' }]);

  // A CLI whose own help fails stops the build: the page would otherwise drift from the CLI.
  writeFileSync(join(root, 'src/cli/main.ts'), "console.error('boom'); process.exit(1);");
  await assert.rejects(readCliHelp(root), /distvae --help exited with code 1; the CLI reference cannot be generated:\nboom/);
});
