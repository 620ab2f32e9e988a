import test from 'ava';
import fc from 'fast-check';
import { compile, evalCondition, ExprError, type Value } from '../src/analysis/expr.ts';

/**
 * The condition language: the expr-lang/expr subset analysis templates use, with expr's
 * precedence (parser/operator/operator.go) and Argo Rollouts' environment (evaluate.go:116).
 */

const value = (source: string, result: Value = null) => compile(source).evaluate({ result });

const rows: Array<[string, Value, Value]> = [
  // precedence and associativity (operator.go)
  ['1 + 2 * 3', null, 7],
  ['(1 + 2) * 3', null, 9],
  ['2 ** 3 ** 2', null, 512],
  ['2 ^ 3', null, 8],
  ['-2 ** 2', null, -4],
  ['10 - 4 - 3', null, 3],
  ['10 / 4', null, 2.5],
  ['7 % 3', null, 1],
  ['not true == false', null, true],
  ['!false && true', null, true],
  ['true or false and false', null, true],
  ['1 < 2 < 3', null, true],
  ['3 > 2 > 2', null, false],
  ['1 == 1.0', null, true],
  ['0x10 + 0b11 + 0o7 + 1_000', null, 1026],
  ['.5 + 1e1', null, 10.5],
  // result, indices, members
  ['result[0] >= 0.95', [0.97], true],
  ['result[-1]', [1, 2, 3], 3],
  ['result[1:]', [1, 2, 3], [2, 3]],
  ['result[:-1]', [1, 2, 3], [1, 2]],
  ['len(result) == 0 || result[0] < 0.05', [], true],
  ['result.requests_made * result.requests_succeeded / 100 >= 90', { requests_made: 100, requests_succeeded: 95 }, true],
  ['result["a b"]', { 'a b': 1 }, 1],
  ['result.missing', { a: 1 }, null],
  ['result?.x', null, null],
  ['result ?? 5', null, 5],
  ['result[0] > 1 ? "high" : "low"', [2], 'high'],
  // membership and strings
  ['2 in result', [1, 2], true],
  ['3 not in result', [1, 2], true],
  ['"a" in {a: 1}', null, true],
  ['"abc" contains "b"', null, true],
  ['"abc" startsWith "ab" && "abc" endsWith "bc"', null, true],
  ['"abc" matches "^a.c$"', null, true],
  ['"a" + \'b\' + `c`', null, 'abc'],
  ['1..3', null, [1, 2, 3]],
  // predicates and builtins
  ['all(result, # < 1000)', [10, 999], true],
  ['all(result, {# > 1})', [2, 0], false],
  ['any(result, # > 5)', [1, 6], true],
  ['none(result, # > 5)', [1, 2], true],
  ['one(result, # > 1)', [1, 2], true],
  ['count(result, # > 1)', [1, 2, 3], 2],
  ['filter(result, # > 1)', [1, 2, 3], [2, 3]],
  ['map(result, # * 2)', [1, 2], [2, 4]],
  ['all(result, .ok)', [{ ok: true }, { ok: true }], true],
  ['sum(result)', [1, 2, 3], 6],
  ['mean(result)', [1, 2, 3], 2],
  ['median(result)', [3, 1, 2, 10], 2.5],
  ['max(result)', [1, 5, 3], 5],
  ['min(3, 1, 2)', null, 1],
  ['abs(-1.5) + ceil(1.2) + floor(1.8) + round(2.5)', null, 1.5 + 2 + 1 + 3],
  ['int(2.9) + float("1.5")', null, 3.5],
  ['len("abc") + len({a: 1})', null, 4],
  // Argo Rollouts' functions (evaluate.go)
  ['asInt(result) == 1', '1', true],
  ['asFloat(result) > 1', '1.5', true],
  ['isNaN(result)', NaN, true],
  ['isInf(result)', -Infinity, true],
  ['isNil(result)', null, true],
  ['default(result, 0) < 0.05', null, true],
  ['default(result, 0)', 7, 7],
];

for (const [source, result, expected] of rows) {
  test(`${source} with result ${JSON.stringify(result)} is ${JSON.stringify(expected)}`, (t) => {
    const got = compile(source, ['result']).evaluate({ result }, {
      asInt: (v) => Math.trunc(Number(v[0])), asFloat: (v) => Number(v[0]), isNaN: (v) => Number.isNaN(v[0]), isInf: (v) => Math.abs(v[0] as number) === Infinity,
      isNil: () => result === null, default: (v) => (result === null ? v[1]! : result),
    });
    t.deepEqual(got, expected);
  });
}

test('Argo Rollouts\' own functions through evalCondition', (t) => {
  t.true(evalCondition('1', 'asInt(result) == 1'));
  t.true(evalCondition(1.9, 'asInt(result) == 1'));
  t.throws(() => evalCondition('1.1', 'asInt(result) == 1'), { message: /invalid syntax/ });
  t.throws(() => evalCondition([1], 'isNaN(result)'), { message: /cannot use \[\]interface \{\} as argument/ });
  t.true(evalCondition('+Inf', 'isInf(asFloat(result))'));
  t.true(evalCondition(null, 'isNil(result)'));
  t.false(evalCondition([], 'isNil(result)'), 'an empty vector is not nil (prometheus.go makes a slice)');
});

const errors: Array<[string, Value, RegExp]> = [
  ['invalidVariable', null, /^unknown name invalidVariable$/],
  ['foo(1)', null, /unknown func foo/],
  ['result(1)', null, /result is not callable/],
  ['1', null, /expected bool, but got int/],
  ['result[0] >= 0.95', [], /index out of range: 0 \(array length is 0\)/],
  ['result[0] == "x"', [1], /mismatched types int and string/],
  ['result < 1', [1], /mismatched types/],
  ['7.5 % 2 == 1', null, /mismatched types float64 and int/],
  ['1 % 0 == 1', null, /integer divide by zero/],
  ['result.x == 1', null, /cannot fetch/],
  ['"abc', null, /literal not terminated/],
  ['1 +', null, /unexpected token/],
  ['let x = 1; x > 0', null, /not supported/],
  ['result | len()', null, /pipe operator/],
  ['(1 < 2', null, /expected "\)"/],
  ['nil ?? 1 + 2 > 0', null, /cannot be mixed/],
];

for (const [source, result, message] of errors) {
  test(`${JSON.stringify(source)} is an error: ${message.source}`, (t) => {
    const error = t.throws(() => evalCondition(result, source));
    t.true(error instanceof ExprError);
    t.regex(error!.message, message);
  });
}

test('comparisons of numbers are Go\'s (IEEE 754): NaN compares false, whatever the operator', (t) => {
  fc.assert(fc.property(fc.double(), fc.double(), (a, b) => {
    for (const op of ['<', '<=', '>', '>=', '==', '!='] as const) {
      const expected = op === '<' ? a < b : op === '<=' ? a <= b : op === '>' ? a > b : op === '>=' ? a >= b : op === '==' ? a === b : a !== b;
      if (evalCondition([a, b], `result[0] ${op} result[1]`) !== expected) return false;
    }
    return true;
  }));
  t.pass();
});

test('arithmetic on results agrees with float64 arithmetic', (t) => {
  fc.assert(fc.property(fc.double({ noNaN: true }), fc.double({ noNaN: true }), fc.double({ noNaN: true }), (a, b, c) => {
    const got = compile('result[0] + result[1] * result[2]').evaluate({ result: [a, b, c] });
    return Object.is(got, a + b * c);
  }));
  t.pass();
});

test('a condition compiles once and evaluates for any result', (t) => {
  const c = compile('len(result) > 0 && result[0] < 0.05');
  t.true(evalCondition([0.01], c));
  t.false(evalCondition([0.08], c));
  t.false(evalCondition([], c));
});
