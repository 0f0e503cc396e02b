// stage: parse
x = "a \q"
