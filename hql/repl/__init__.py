"""The REPL: a plain line mode for pipes, and an interactive prompt-toolkit mode for terminals."""
