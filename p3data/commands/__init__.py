"""Subcommands of the `p3data` command line, one module per job."""
