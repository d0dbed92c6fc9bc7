"""The dsf compiler: ``dsf-compile``."""

#: The release, owned by the contract: the agent and the compiler are released together.
from dsf_contract import __version__ as __version__
