// The `distvae` command line: dispatch to a command, print help, and turn every DistVaeError
// into a message on stderr (and `{ "error": ... }` on stdout with --json) with exit code 2 for a
// refusal and 3 for a runtime failure (exit-codes.ts). Unexpected failures exit 1 with one line;
// the stack only with DISTVAE_DEBUG=1.

import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { DistVaeError, isDistVaeError, killChildProcesses } from '../index.js';
import { EXIT, exitCodeOf } from './exit-codes.js';
import { commandHelp, parseCommandArgs, type CliIO, type CommandSpec } from './args.js';
import { analyzeCommand } from './commands/analyze.js';
import { benchCommand } from './commands/bench.js';
import { bucketCommand } from './commands/bucket.js';
import { decodeCommand } from './commands/decode.js';
import { demoCommand } from './commands/demo.js';
import { devicesCommand } from './commands/devices.js';
import { encodeCommand } from './commands/encode.js';
import { planCommand } from './commands/plan.js';
import { workerCommand } from './commands/worker-command.js';

export const COMMANDS: readonly CommandSpec[] = [
  decodeCommand,
  encodeCommand,
  planCommand,
  analyzeCommand,
  bucketCommand,
  benchCommand,
  workerCommand,
  devicesCommand,
  demoCommand,
];

/** The version in the package's package.json (two folders up from src/cli and from dist/cli). */
export function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  return String(manifest.version);
}

export function mainHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length)) + 2;
  return [
    'distvae — decode diffusion-model latents with a VAE decoder, tiled and distributed',
    '',
    'Usage: distvae <command> [options]   (distvae help <command> or distvae <command> --help for its options; distvae --version)',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}${c.summary}`),
    '',
  ].join('\n');
}

export async function runCli(argv: string[], io: CliIO): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--version' || name === '-V') {
    io.stdout(`distvae ${packageVersion()}\n`);
    return 0;
  }
  if (name === 'help' && rest.length > 0) {
    // `distvae help decode` is `distvae decode --help`.
    return runCli([rest[0]!, '--help', ...rest.slice(1)], io);
  }
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
        const reasons = [
          {
            code: 'UNKNOWN_COMMAND',
            field: 'command',
            value: name,
            valid: COMMANDS.map((c) => c.name).join(', '),
            message: `unknown command ${JSON.stringify(name)}`,
          },
        ];
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

/** Exit codes after a signal (docs/design.md §9): 128 + the signal's number. */
const SIGNAL_EXIT_CODES = { SIGINT: EXIT.sigint, SIGTERM: EXIT.sigterm } as const;
const DEFAULT_SIGNAL_GRACE_MS = 1500;

/**
 * Runs the CLI as a process: SIGINT/SIGTERM abort the command (its ranks are ended, nothing is
 * written) and the process exits 130/143 once the command has returned or its grace period has
 * passed, whichever is first; a second signal exits at once. Rank processes and ffmpeg are killed on exit.
 */
function runProcess(argv: string[]): void {
  const controller = new AbortController();
  let received: keyof typeof SIGNAL_EXIT_CODES | null = null;
  const command = COMMANDS.find((c) => c.name === argv[0]);
  const exitAfterSignal = () => process.exit(SIGNAL_EXIT_CODES[received!]);
  // A rank thread inside a decoder call cannot be stopped, and process.exit waits for it: past
  // the grace period the process ends by the signal itself (the shell sees 128 + its number),
  // taking its rank processes and ffmpeg (and its partial file) with it.
  const endBySignal = () => {
    killChildProcesses();
    process.removeAllListeners(received!);
    process.kill(process.pid, received!);
  };
  let graceMs = command?.signalGraceMs ?? DEFAULT_SIGNAL_GRACE_MS;
  const onSignal = (signal: keyof typeof SIGNAL_EXIT_CODES) => {
    if (received !== null) return endBySignal();
    received = signal;
    if (!command?.drainsOnSignal) process.stderr.write(`distvae${command ? ` ${command.name}` : ''}: ${signal}: stopping\n`);
    controller.abort(new DistVaeError('ABORTED', `interrupted by ${signal}`));
    setTimeout(endBySignal, graceMs).unref();
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  const io: CliIO = {
    stdout: (t) => process.stdout.write(t),
    stderr: (t) => process.stderr.write(t),
    stderrIsTTY: Boolean(process.stderr.isTTY),
    signal: controller.signal,
    setSignalGrace: (ms) => (graceMs = ms),
  };
  let settled = false;
  // Node ends a process whose event loop has nothing left to wait for, with code 0, even while a
  // command's promise is pending (a rank released while the coordinator still awaited it): a
  // decode must never end silently "successful" without its output.
  process.once('beforeExit', () => {
    if (settled) return;
    process.stderr.write(
      `distvae${command ? ` ${command.name}` : ''}: internal error: the command was still running when nothing was left to wait for (no rank, file or timer pending); nothing was written\n`,
    );
    killChildProcesses();
    process.exit(EXIT.internal);
  });
  runCli(argv, io).then((code) => {
    settled = true;
    if (received === null) process.exitCode = code;
    else if (command?.drainsOnSignal) process.exit(code);
    else exitAfterSignal();
  });
}

const invokedDirectly = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (invokedDirectly) runProcess(process.argv.slice(2));
