"""Subcommands of the `p3data` command line, one module per job."""

__all__: list[str] = []  # the interface is the command line: `p3data --help`
