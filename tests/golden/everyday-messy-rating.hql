// everyday.md section 1: a front-matter value of another kind (`rating: high`) makes
// its comparison false; the query goes on and one warning counts the cards.
// vault: everyday
// expected-type: List<String>
// expected: [dune, walden]
cards | filter(c => c.metadata.rating >= 4) | map(c => c.name)
