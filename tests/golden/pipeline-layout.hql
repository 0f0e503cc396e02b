// Comments, blank lines and operators that start or end a line.
// expected: [4, 3]

xs = [3, 1, 2] // trailing comment

xs
  | map(x => x +
        1)

  | sort((a, b) => compare(b, a))
  | take(2)
