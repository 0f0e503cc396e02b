// stage: evaluate
big = [9223372036854775807]
big | map(n => n + 1)
