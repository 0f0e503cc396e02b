// vault: vault
// Link edges in (source, target) order, relation edges after them, each with its data.
cards
| uplinks
| map(e => { source: e.source, target: e.target, data: e.data })
| table
