/**
 * How many lastgood processes the race tests start at once, and for how many rounds: ten
 * concurrent runs on one ref already race at every write point (each test checks that exactly one
 * says "created" and that nothing is lost). Raise them to hunt a rare interleaving:
 * `LASTGOOD_RACE_RUNS=20 LASTGOOD_RACE_ROUNDS=28 npx ava test/local-races.test.ts` (issue 15's figure).
 */
export const RACE_RUNS = Number(process.env.LASTGOOD_RACE_RUNS ?? 10);
export const RACE_ROUNDS = Number(process.env.LASTGOOD_RACE_ROUNDS ?? 2);
