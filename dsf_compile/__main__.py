"""``python -m dsf_compile``: the same as ``dsf-compile``."""

from dsf_compile.cli import main

main()
