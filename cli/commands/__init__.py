"""CLI subcommands, one module per command group; each exposes `register(subparsers)`."""
