// The CLI run inside the test process (runCli with stdout / stderr captured, stderr not a TTY),
// for the tests that need only its exit code and output, not a process of its own; and the
// argv of the decode most of them make, so each call reads as what it varies.

import { runCli } from '../main.js';

/** What one in-process run of `distvae` returned and printed. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `distvae ...argv` in this process and collects what it prints. */
export async function cli(...argv: string[]): Promise<CliRun> {
  const run: CliRun = { code: 0, stdout: '', stderr: '' };
  run.code = await runCli(argv, { stdout: (t) => void (run.stdout += t), stderr: (t) => void (run.stderr += t), stderrIsTTY: false });
  return run;
}

/**
 * `cli` with environment variables set for the run and restored after it (the CLI reads some,
 * e.g. HF_HUB_CACHE, where a test cannot pass an option).
 */
export function cliWithEnv(env: Record<string, string>): (...argv: string[]) => Promise<CliRun> {
  return async (...argv) => {
    const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
    Object.assign(process.env, env);
    try {
      return await cli(...argv);
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  };
}

/** argv of `decode` with synthetic weights for a config file: the options a test adds follow it. */
export function syntheticDecode(config: string, latents: string, out: string): string[] {
  return ['decode', '--synthetic', '--config', config, '--latents', latents, '--out', out];
}

/** The `error` object a refused run prints as its only stdout with --json. */
export function refusalOf(run: { stdout: string }): {
  code: string;
  message: string;
  reasons: { code: string; field: string; valid: string }[];
} {
  return JSON.parse(run.stdout).error;
}
