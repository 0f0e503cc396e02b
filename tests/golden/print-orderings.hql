// expected-type: List<Ordering>
// expected: [Less, Equal, Greater]
[0, 1, 2] | map(n => compare(n, 1))
