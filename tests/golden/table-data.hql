{ b: "x", a: 1, c: [1, "y"], d: {} } | table
