import { parseArgs } from 'node:util';
import { avoided, CLASSES, KNOWN_FAILING } from '../test/sim/classes.js';
import { describeFailure, isRoot, simulate, simulateKills, stats } from '../test/sim/harness.js';

/**
 * `npm run simulate -- --seed S --scenarios N [--class C]`: the simulation of test/safety/simulation.test.ts,
 * run longer. Each class (or the one named) runs N scenarios from seed S, then the kills (`--class sigkill`:
 * the built CLI SIGKILLed at the nth change to a sessions folder, each scenario three CLI runs); a failure
 * prints the seed, what broke and the shrunk scenario. Exit 1 when a class that is not known to fail fails.
 */
const { values } = parseArgs({
  options: {
    seed: { type: 'string' },
    scenarios: { type: 'string', default: '50' },
    class: { type: 'string' },
  },
});
const seed = values.seed !== undefined ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31);
const n = Number(values.scenarios);
if (!Number.isInteger(seed) || !Number.isInteger(n) || n < 1) {
  console.error('usage: npm run simulate -- --seed S --scenarios N [--class NAME]');
  process.exit(2);
}
const kills = values.class === undefined || values.class === 'sigkill';
const classes = values.class ? CLASSES.filter((c) => c.name === values.class) : CLASSES;
if (classes.length === 0 && !kills) {
  console.error(`no class ${values.class}; classes: ${[...CLASSES.map((c) => c.name), 'sigkill'].join(', ')}`);
  process.exit(2);
}
console.log(
  `simulation: seed ${seed}, ${n} scenario(s) a class, ${classes.length + (kills ? 1 : 0)} class(es)${isRoot() ? '' : ' (not root: mounts and devices skipped)'}`,
);
let bad = 0;
const t0 = performance.now();
for (const c of classes) {
  if (c.root && !isRoot()) {
    console.log(`${c.name}: skipped (${c.root})`);
    continue;
  }
  const known = KNOWN_FAILING[c.name];
  const r = await simulate(seed, n, { ...c.shape, root: isRoot(), avoid: known ? undefined : avoided() });
  if (!r.failure) console.log(`${c.name}: ${r.runs} scenario(s) hold`);
  else {
    console.log(describeFailure(r, c.name) + (known ? `\n(known failing: ${known})` : ''));
    if (!known) bad++;
  }
}
if (kills) {
  const known = KNOWN_FAILING.sigkill;
  const r = await simulateKills(seed, n, isRoot());
  if (!r.failure) console.log(`sigkill: ${r.runs} scenario(s) hold`);
  else {
    console.log(describeFailure(r, 'sigkill') + (known ? `\n(known failing: ${known})` : ''));
    if (!known) bad++;
  }
}
console.log(`simulation: ${JSON.stringify(stats)} in ${Math.round((performance.now() - t0) / 1000)} s`);
process.exit(bad > 0 ? 1 : 0);
