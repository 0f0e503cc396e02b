// vault: vault
// A relation card is no node: its endpoints are, and a graph holds an edge once.
cards
| typed(RelationCard)
| graph
| table
