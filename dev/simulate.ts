import { parseArgs } from 'node:util';
import { avoided, CLASSES, KNOWN_FAILING } from '../test/sim/classes.js';
import { describeFailure, isRoot, simulate, stats } from '../test/sim/harness.js';

/**
 * `npm run simulate -- --seed S --scenarios N [--class C]`: the simulation of test/safety/simulation.test.ts,
 * run longer. Each class (or the one named) runs N scenarios from seed S; a failure prints the seed,
 * what broke and the shrunk scenario. Exit 1 when a class that is not known to fail fails.
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
const classes = values.class ? CLASSES.filter((c) => c.name === values.class) : CLASSES;
if (classes.length === 0) {
  console.error(`no class ${values.class}; classes: ${CLASSES.map((c) => c.name).join(', ')}`);
  process.exit(2);
}
console.log(
  `simulation: seed ${seed}, ${n} scenario(s) a class, ${classes.length} class(es)${isRoot() ? '' : ' (not root: mounts and devices skipped)'}`,
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
console.log(`simulation: ${JSON.stringify(stats)} in ${Math.round((performance.now() - t0) / 1000)} s`);
process.exit(bad > 0 ? 1 : 0);
