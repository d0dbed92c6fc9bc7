"""The dsf compiler: ``dsf-compile``."""

#: The release: the distribution's version and the agent image's tag (``v`` + this is the Git tag).
__version__ = "0.1.0"
