// The help texts say what the code does: every list of family names in a command's --help is the
// registry's (all families, or those a stated property selects, computed here from the registry),
// never a stale copy; and a mistyped option or family gets a "did you mean", the options listed once.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { didYouMean } from '../errors.js';
import { FAMILIES, FAMILY_NAMES, planningVae } from '../families/registry.js';
import { hasMemoryModel } from '../memory/model.js';
import { policyPlans, type PlanClass } from '../memory/policy.js';
import { commandHelp } from './args.js';
import { COMMANDS } from './main.js';
import { cli } from './testing/in-process.js';

/** Comma-separated runs of words in `text` in which at least two are family names. */
function familyLists(text: string): string[][] {
  const known = new Set<string>(FAMILY_NAMES);
  const lists: string[][] = [];
  for (const m of text.replace(/\n/g, ' ').matchAll(/[\w.-]+(?:, [\w.-]+)+/g)) {
    const words = m[0].split(', ');
    if (words.filter((w) => known.has(w)).length >= 2) lists.push(words);
  }
  return lists;
}

test('every family list in a --help text is the registry: all families, or those without a memory model where it says so', () => {
  const withoutModel = FAMILIES.filter((f) => !hasMemoryModel(planningVae(f.name))).map((f) => f.name);
  let seen = 0;
  for (const command of COMMANDS) {
    const help = commandHelp(command);
    for (const list of familyLists(help)) {
      seen++;
      const context = help.replace(/\n/g, ' ');
      const describesMemory = context.includes(`without a memory model (${list.join(', ')})`);
      assert.deepEqual(list, describesMemory ? withoutModel : [...FAMILY_NAMES], `distvae ${command.name} --help lists ${list.join(', ')}`);
    }
  }
  assert.ok(seen >= 3, 'the family lists were found');
});

test('did you mean: the name a mistyped value starts with, else the nearest within a third of its length, else nothing', () => {
  assert.equal(didYouMean('taef2', FAMILY_NAMES), ' (did you mean "tae"?)');
  assert.equal(didYouMean('autoencoderkl', FAMILY_NAMES), ' (did you mean "autoencoder-kl"?)');
  assert.equal(didYouMean('--windw', ['--window', '--overlap', '--width']), ' (did you mean "--window"?)');
  assert.equal(didYouMean('sd15', FAMILY_NAMES), '');
  assert.equal(didYouMean('--bogus', ['--window', '--overlap']), '');
});

test('an unknown option names the option it resembles and lists the options once; an unknown family suggests one', async () => {
  const base = ['plan', '--height', '512', '--width', '512'];
  const option = await cli(...base, '--family', 'autoencoder-kl', '--windw', '256');
  assert.equal(option.code, 2);
  assert.match(option.stderr, /Unknown option '--windw' \(did you mean "--window"\?\)/);
  assert.equal(option.stderr.split('--max-tensor').length - 1, 1, option.stderr);
  const family = await cli(...base, '--family', 'taef2');
  assert.equal(family.code, 2);
  assert.match(family.stderr, /unknown family "taef2" \(did you mean "tae"\?\)/);
});

test("decode and plan --help state the policy's order as the policy takes it: exact, halo-exact, blended, fastest within a class; tone drift", () => {
  const order: PlanClass[] = ['exact', 'halo-exact', 'blended'];
  // The policy: classes never go back (TAESD is local, so it has all three), and within a class times never fall.
  const plans = [...policyPlans(planningVae('tae'), { height: 512, width: 512 }, { ranks: 2, threads: 1, cores: 2 })];
  assert.deepEqual([...new Set(plans.map((p) => p.class))], order);
  for (let i = 1; i < plans.length; i++)
    if (plans[i]!.class === plans[i - 1]!.class) assert.ok(plans[i]!.time.seconds >= plans[i - 1]!.time.seconds);
  assert.equal(plans.find((p) => p.plan.strategy === 'whole')!.plan.threads, 2);
  for (const name of ['decode', 'plan']) {
    const help = commandHelp(COMMANDS.find((c) => c.name === name)!).replace(/\s+/g, ' ');
    assert.match(
      help,
      /the whole decode or row sharding( on the R ranks)?, then halo-exact tiles, then blended tiles .* within a class the fastest by the time model/,
      name,
    );
    assert.match(help, /whole decode runs on one rank with (R x --threads|their threads)/, name);
    assert.match(help, /tiles may shift tone at their seams/, name);
  }
});
