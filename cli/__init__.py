"""The `sowsched` command line: every verb, its options and its output (text or one JSON document)."""
