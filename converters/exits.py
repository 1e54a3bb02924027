"""The exit status of every ``fastdata`` subcommand (see :mod:`.cli`)."""

EXIT_OK, EXIT_PROBLEMS, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130
