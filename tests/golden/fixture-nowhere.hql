// vault: vault
// An unresolved reference is absence plus a warning; steps lift over it.
// expected: 0
[[nowhere]] | uplinks | count
