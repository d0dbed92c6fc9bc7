"""``python -m dsf_compile``: the same as ``dsf-compile``."""

from dsf_compile.commands.cli import main

main()
