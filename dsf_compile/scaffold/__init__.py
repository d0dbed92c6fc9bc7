"""``dsf-compile init``: a fleet repository of its own (``fleet-repo.md``).

The scaffold's files are package data under ``fleet/``: plain files with a few
``@NAME@`` placeholders (the action the workflows use, the compiler's version, the agent
image), filled in by :func:`scaffold_files`. :mod:`dsf_compile.pipeline.init` writes them,
renders and checks them, then moves them into place.
"""
