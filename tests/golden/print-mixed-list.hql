// Reference 8.1: the String stays a String inside a List<Data>.
// expected-type: List<Data>
// expected: [{species: "owl"}, owl, 3]
[{ species: "owl" }, "owl", 3]
