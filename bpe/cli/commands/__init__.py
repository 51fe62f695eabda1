"""The command's subcommands, one module each: run(args) -> exit status."""
