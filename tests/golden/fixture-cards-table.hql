// vault: vault
cards
| filter(c => c.metadata.owner == "ada")
| table
