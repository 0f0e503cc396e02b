// mode: collect
[1] | take(1, 2)
[1] | take(n = 1, n = 2)
[1] | count(value = 1)
[1] | filter(n => n)
[1] | sort((a, b) => true)
