// everyday.md section 1: precedence, integer and float arithmetic, strings, absence.
// expected-type: Data
x = {a: 1}.missing
{
  arithmetic: 1 + 2 * 3 - -4 % 3,
  division: 7 / 2,
  left: 10 - 4 - 3,
  text: "a" + "b",
  logic: not 1 > 2 and 2 <= 2,
  fallback: x ?? "fallback",
  decided: false and x > 1,
  lifted: x > 1,
}
