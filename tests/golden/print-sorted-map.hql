// expected-type: SortedMap<String, Ordering>
// expected: SortedMap {a: Less, b: Greater}
SortedMap(["b", "a"], [compare(2, 1), compare(1, 2)])
