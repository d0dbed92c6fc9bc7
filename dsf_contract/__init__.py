"""The contract between the compiler (``dsf_compile``) and the agent (``agent``).

Everything the compiler writes and the agent reads is defined here once, and both sides
import it: the summary, the score and condition names, the agent's flags, its metric
names, what a failed request is called, the escaping of what it echoes, the bounded JSON
and YAML readers. How requests travel is not a contract fact: that plumbing is
:mod:`dsf_transport`. The agent imports only these two packages of the project, so its
image holds the agent, them and their dependencies (``docs/architecture.md`` lists what
lives where).
"""

#: The release: the distribution's version, the agent image's tag and the agent's
#: ``User-Agent`` (``v`` + this is the Git tag).
__version__ = "0.1.0"
