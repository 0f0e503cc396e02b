// mode: collect
// A failed binding binds its name as Data, so the next statement is judged on its own.
a = nosuchthing
b = a + 1
