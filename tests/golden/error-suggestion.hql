// mode: collect
[1] | tabel
[1] | lexical("q")
cards = 1
