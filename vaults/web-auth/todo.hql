// What is still to do, by title: `hql --vault vaults/web-auth run vaults/web-auth/todo.hql`
// (a program file is not a card: only Markdown files are)
cards | filter(c => c.metadata.status == "todo") | sort(by = c => c.title) | map(c => c.title)
