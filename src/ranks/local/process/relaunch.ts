// A long-running CLI process (`distvae worker`, `distvae decode --out-dir`) started once more
// under the allocator settings distvae gives the processes it starts (allocator-env.ts), so its
// RSS stays flat over hours as a rank's peak repeats: glibc reads those variables only at start,
// so a process that was not started with them can get them only by starting again.
//
// The first process (the launcher) stays as a transparent wrapper: stdio is inherited (the child
// writes to the same terminal, files and pipes), SIGINT/SIGTERM/SIGHUP/SIGQUIT are forwarded, the
// child's exit code is its own and a child killed by a signal kills the launcher by the same
// signal. The child runs in its own session (detached): a Ctrl-C on the terminal then reaches it
// once, through the launcher, and not a second time from the terminal (the CLI's second signal
// means "exit at once", cli/main.ts). A child whose launcher is gone (SIGKILL) ends itself
// (parent-watch.ts), as a rank does. No relaunch when the environment already sets the settings
// or the user opted out (DISTVAE_RANK_ALLOCATOR=inherit).

import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { RANK_ALLOCATOR_DEFAULTS, RANK_ALLOCATOR_ENV, withAllocatorDefaults } from './allocator-env.js';
import { watchParent } from './parent-watch.js';

/** The variable the launcher gives its child: its own pid (the child ends itself once that is no longer its parent). */
export const RELAUNCHED_BY_ENV = 'DISTVAE_RELAUNCHED_BY';

/** Signals the launcher passes on to the child (the child decides what they mean). */
const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'] as const;

/**
 * Whether a process started with `env` would lack a setting it gets when relaunched: on Linux
 * (glibc reads them; macOS and Windows have no use for them), some default of allocator-env.ts
 * unset, no opt-out (`DISTVAE_RANK_ALLOCATOR=inherit`), and not itself a relaunched child (which
 * has them all, or had them removed on purpose).
 */
export function needsAllocatorRelaunch(env: NodeJS.ProcessEnv, platform: NodeJS.Platform = process.platform): boolean {
  if (platform !== 'linux' || env[RANK_ALLOCATOR_ENV] === 'inherit' || env[RELAUNCHED_BY_ENV] !== undefined) return false;
  return Object.keys(RANK_ALLOCATOR_DEFAULTS).some((name) => env[name] === undefined);
}

/**
 * Runs `script` with `argv` again in a child process under the allocator settings, when this
 * process lacks them (needsAllocatorRelaunch); returns true then, and this process only waits
 * for the child and exits as it does. Returns false when this process should run the command
 * itself: it has the settings, the user opted out, or it is the relaunched child (which then
 * starts watching its launcher). `process.execArgv` (node's own flags) goes to the child too.
 */
export function relaunchUnderAllocator(script: string, argv: readonly string[]): boolean {
  const launcher = process.env[RELAUNCHED_BY_ENV];
  if (launcher !== undefined) {
    // Not passed on to what this process starts (a rank, ffmpeg): they have their own watchers.
    delete process.env[RELAUNCHED_BY_ENV];
    watchParent(Number(launcher));
    return false;
  }
  if (!needsAllocatorRelaunch(process.env)) return false;
  const child = spawn(process.execPath, [...process.execArgv, script, ...argv], {
    stdio: 'inherit',
    detached: true,
    env: { ...withAllocatorDefaults(process.env), [RELAUNCHED_BY_ENV]: String(process.pid) },
  });
  const forward = (signal: NodeJS.Signals) => () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  const handlers = FORWARDED.map((signal) => [signal, forward(signal)] as const);
  for (const [signal, handler] of handlers) process.on(signal, handler);
  // Ctrl-Z: the child, in its own session, would not stop with the launcher; stop both, resume both.
  process.on('SIGTSTP', () => {
    child.kill('SIGSTOP');
    process.kill(process.pid, 'SIGSTOP');
  });
  process.on('SIGCONT', () => child.kill('SIGCONT'));
  child.on('error', (e) => {
    process.stderr.write(`distvae: could not start the command again under the allocator settings: ${e.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    if (signal === null) process.exit(code ?? 1);
    // Dead by a signal: the launcher dies by the same one, so its parent sees what the child saw.
    for (const [name, handler] of handlers) process.off(name, handler);
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
    // A signal the launcher does not die of (ignored by node, e.g. SIGPIPE): the shell's code for it.
    setTimeout(() => process.exit(128 + (constants.signals[signal] ?? 0)), 100).unref();
  });
  return true;
}
