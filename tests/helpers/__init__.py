"""What several test modules share: running the cache builder and reading its output
(`cache`), writing templates (`templates`), T0's own rendering as the reference
(`t0_reference`) and the crash-point driver (`crash_run`)."""
