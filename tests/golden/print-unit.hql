// A program that ends in a binding is Unit.
// expected-type: Unit
// expected: ()
x = 1
