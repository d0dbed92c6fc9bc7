"""The commands: ``dsf-compile`` (its table, handlers and reporters) and ``dsf-mcp``.

The front room: arguments, printing, exit codes and the MCP tools. A command reads its
arguments here and runs a pipeline (:mod:`dsf_compile.pipeline`); nothing below this
room prints or exits.
"""
