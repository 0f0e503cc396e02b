// expected-type: Data
// expected: {tags: [1, "owl", [true, 2.5]]}
{ tags: [1, "owl", [true, 2.5]] }
