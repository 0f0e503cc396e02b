// stage: parse
[1, 2
  3]
