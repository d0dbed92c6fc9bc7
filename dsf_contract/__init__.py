"""The contract between the compiler (``dsf_compile``) and the agent (``agent``).

Everything the compiler writes and the agent reads is defined here once, and both sides
import it; the agent imports nothing else of the project, so its image holds the agent,
this package and their dependencies (``docs/architecture.md`` lists what lives where).
"""

#: The release: the distribution's version, the agent image's tag and the agent's
#: ``User-Agent`` (``v`` + this is the Git tag).
__version__ = "0.1.0"
