// Every kind of plain value in one list of lists.
// expected-type: List<List<Data>>
[
    [1, -2, 9223372036854775807],
    [3.0, 0.75, 0.1 + 0.2, 007.50],
    [true, false],
    ["tab\there", "quote\"d"],
    [{ a: "tab\there", "b.c": [] }],
]
