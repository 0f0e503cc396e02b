// vault: vault
[[bearer-tokens]] | expand(direction = "uplinks") | json
