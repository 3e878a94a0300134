"""The command line: serve, run, explain, rules check, sessions, report, demo."""
