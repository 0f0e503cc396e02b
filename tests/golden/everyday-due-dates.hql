// everyday.md sections 1 and 2: front-matter dates read with date(); a card without
// `due` drops out silently, one whose `due` is no date drops out with one warning.
// vault: everyday
// expected-type: List<Data>
cards
  | filter(c => date(c.metadata.due) < date("2025-06-01") and date(c.metadata.due) - date("2024-01-01") > 30)
  | sort(by = c => c.name, descending = true)
  | map(c => {name: c.name, due: format(date(c.metadata.due) ?? date("2000-01-01"), "DD.MM.YYYY"), weekday: date(c.metadata.due).weekday ?? 0})
