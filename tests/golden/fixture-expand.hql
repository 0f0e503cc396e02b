// vault: vault
// Breadth-first expansion records why each node is present.
[[oauth]]
| expand(depth = 2)
| table
