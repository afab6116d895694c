// The `distvae` command line: dispatch to a command, print help, and turn every DistVaeError
// into a message on stderr (and `{ "error": ... }` on stdout with --json) with exit code 2 for a
// refusal and 3 for a runtime failure (exit-codes.ts). Unexpected failures exit 1 with one line;
// the stack only with DISTVAE_DEBUG=1.

import { pathToFileURL } from 'node:url';
import { isDistVaeError } from '../index.js';
import { EXIT, exitCodeOf } from './exit-codes.js';
import { commandHelp, parseCommandArgs, type CliIO, type CommandSpec } from './args.js';
import { analyzeCommand } from './commands/analyze.js';
import { benchCommand } from './commands/bench.js';
import { bucketCommand } from './commands/bucket.js';
import { decodeCommand } from './commands/decode.js';
import { demoCommand } from './commands/demo.js';
import { encodeCommand } from './commands/encode.js';
import { planCommand } from './commands/plan.js';
import { workerCommand } from './commands/worker-command.js';

export const COMMANDS: readonly CommandSpec[] = [decodeCommand, encodeCommand, planCommand, analyzeCommand, bucketCommand, benchCommand, workerCommand, demoCommand];

export function mainHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length)) + 2;
  return [
    'distvae — decode diffusion-model latents with a VAE decoder, tiled and distributed',
    '',
    'Usage: distvae <command> [options]   (distvae <command> --help for its options)',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}${c.summary}`),
    '',
  ].join('\n');
}

export async function runCli(argv: string[], io: CliIO): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.stdout(mainHelp());
    return name === undefined ? EXIT.refused : EXIT.ok;
  }
  const command = COMMANDS.find((c) => c.name === name);
  const wantsJson = rest.includes('--json');
  try {
    if (!command) {
      io.stderr(`distvae: unknown command ${JSON.stringify(name)}: expected one of ${COMMANDS.map((c) => c.name).join(', ')}\n`);
      if (wantsJson) {
        const reasons = [{ code: 'UNKNOWN_COMMAND', field: 'command', value: name, valid: COMMANDS.map((c) => c.name).join(', '), message: `unknown command ${JSON.stringify(name)}` }];
        io.stdout(JSON.stringify({ error: { code: 'INVALID_ARGUMENT', message: reasons[0]!.message, reasons } }) + '\n');
      }
      return EXIT.refused;
    }
    const args = parseCommandArgs(command, rest);
    if (args.flag('help')) {
      io.stdout(commandHelp(command));
      return EXIT.ok;
    }
    return await command.run(args, io);
  } catch (e) {
    if (isDistVaeError(e)) {
      io.stderr(`distvae ${name}: ${e.code}: ${e.message}\n`);
      for (const r of e.reasons) io.stderr(`  - ${r.field} = ${JSON.stringify(r.value)}: expected ${r.valid}\n`);
      if (wantsJson) io.stdout(JSON.stringify({ error: e.toJSON() }) + '\n');
      return exitCodeOf(e);
    }
    const err = e as Error;
    io.stderr(`distvae ${name}: internal error: ${err?.message ?? String(e)}\n`);
    if (process.env['DISTVAE_DEBUG'] === '1' && err?.stack) io.stderr(err.stack + '\n');
    if (wantsJson) io.stdout(JSON.stringify({ error: { code: 'INTERNAL', message: err?.message ?? String(e), reasons: [] } }) + '\n');
    return EXIT.internal;
  }
}

const invokedDirectly = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (invokedDirectly) {
  const io: CliIO = {
    stdout: (t) => process.stdout.write(t),
    stderr: (t) => process.stderr.write(t),
    stderrIsTTY: Boolean(process.stderr.isTTY),
  };
  runCli(process.argv.slice(2), io).then((code) => {
    process.exitCode = code;
  });
}
