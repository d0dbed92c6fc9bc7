"""The agent image a fleet runs when ``agent.image`` is not set, and when to warn about it.

The rule (docs/install.md): the release workflow of a GitHub repository ``OWNER/NAME``
publishes the agent image as ``ghcr.io/owner/name-agent:VERSION`` (lower-cased: image
names are). A fleet's ``repository.url`` names that repository, so the rendered default
image is derived from it; the repository's own release then publishes exactly what every
cluster pulls. Elsewhere (not GitHub) nothing can be derived: the default is a local
image name, and ``validate`` says to set ``agent.image``.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from dsf_compile import __version__
from dsf_contract.bounded_yaml import Document
from dsf_contract.problem import Problem

GITHUB_HOSTS = frozenset({"github.com", "www.github.com"})
#: The owner of ``repository.url``'s default (``https://github.com/example/dsf-fleet.git``).
EXAMPLE_OWNER = "example"
#: The default when nothing can be derived: an image built on the host, which no registry
#: serves (``agent/build-image.sh --tag localhost/dsf-agent:VERSION``).
LOCAL_IMAGE = f"localhost/dsf-agent:{__version__}"
# one path component of an OCI image name (distribution's reference grammar)
_COMPONENT_RE = re.compile(r"[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*")
_COMPONENT = _COMPONENT_RE.pattern
_DOMAIN = (
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*"
    r"|\[[0-9A-Fa-f:.]+\])(?::[0-9]+)?"
)
#: A whole image reference as the kubelet parses it: ``[domain/]path[:tag][@digest]``.
_REFERENCE_RE = re.compile(
    rf"(?:(?P<domain>{_DOMAIN})/)?(?P<path>{_COMPONENT}(?:/{_COMPONENT})*)"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?"
    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9A-Fa-f]{32,})?"
)
#: distribution's limit on the name part (domain and path).
MAX_IMAGE_NAME = 255
#: The name, a tag of 128 and a long digest: no reference is longer.
MAX_IMAGE_REFERENCE = 512


def check_image_reference(value: str) -> str:
    """``value`` when the kubelet can parse it as an image reference, else ValueError.

    An image that is not a reference passes the API server and fails on every node
    (``InvalidImageName``): lower-case path, an optional registry host, tag and digest.
    """
    if len(value) > MAX_IMAGE_REFERENCE:  # before the pattern: it backtracks on long text
        raise ValueError(f"is over {MAX_IMAGE_REFERENCE} characters: not an image reference")
    found = _REFERENCE_RE.fullmatch(value)
    if found is None:
        raise ValueError(
            f"{value!r} is not an image reference the kubelet can pull "
            "([registry/]path[:tag][@sha256:…], the path in lower case, no spaces)"
        )
    name, _, tag = value.split("@", 1)[0].rpartition(":")
    if not name or "/" in tag:  # no tag (the colon, if any, was a registry port's)
        name = value.split("@", 1)[0]
    if len(name) > MAX_IMAGE_NAME:
        raise ValueError(f"the image name is over {MAX_IMAGE_NAME} characters")
    return value


def github_repository(url: str) -> tuple[str, str] | None:
    """``(owner, name)`` of a GitHub repository URL, or None."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return None
    segments = [s for s in parts.path.split("/") if s]
    if host not in GITHUB_HOSTS or len(segments) != 2:
        return None
    owner, name = segments[0], segments[1].removesuffix(".git")
    return (owner, name) if owner and name else None


def published_image(url: str) -> str | None:
    """What the release workflow of ``url``'s repository publishes, or None (not derivable)."""
    found = github_repository(url)
    if found is None:
        return None
    owner, name = found[0].lower(), f"{found[1].lower()}-agent"
    if not (_COMPONENT_RE.fullmatch(owner) and _COMPONENT_RE.fullmatch(name)):
        return None
    return f"ghcr.io/{owner}/{name}:{__version__}"


def default_image(url: str) -> str:
    """``agent.image`` when it is not set: derived from ``repository.url``."""
    return published_image(url) or LOCAL_IMAGE


def with_default_image(data: Any) -> Any:
    """``dsf.yaml``'s data with ``agent.image`` filled in from ``repository.url`` when unset.

    Anything malformed is left as it is, for the models to report at its place.
    """
    if not isinstance(data, dict):
        return data
    agent = data.get("agent", {})
    repository = data.get("repository", {})
    if not isinstance(agent, dict) or "image" in agent or not isinstance(repository, dict):
        return data
    url = repository.get("url")
    if not isinstance(url, str):
        return data
    return {**data, "agent": {**agent, "image": default_image(url)}}


def check_default_image(document: Document | None, example_url: str) -> list[Problem]:
    """A warning when the agents would pull an image nothing publishes.

    Only when ``agent.image`` is not set (an image the user names is theirs to publish),
    and only in a ``dsf.yaml`` (a fleet without one takes every default knowingly, and a
    finding is located in a file). Read from the document itself (``example_url`` when it
    sets no ``repository.url``), not from settings that fell back to their defaults
    because another setting is wrong.
    """
    if document is None:
        return []
    data = document.data if isinstance(document.data, dict) else {}
    agent, repository = data.get("agent"), data.get("repository")
    if isinstance(agent, dict) and "image" in agent:
        return []
    written = isinstance(repository, dict) and "url" in repository
    url = repository["url"] if isinstance(repository, dict) and written else example_url
    if not isinstance(url, str) or not _is_url(url):
        return []  # the model reports a URL that is not one
    found = github_repository(url)
    image = published_image(url)
    if image is None:
        message = (
            f"not a GitHub repository whose name makes an image name, so the agents run "
            f"{LOCAL_IMAGE}, which no registry serves: set agent.image to the image your "
            "release publishes (docs/install.md)"
        )
    elif found is not None and found[0].lower() == EXAMPLE_OWNER:
        message = (
            f"{'still' if written else 'not set, so it is'} the example's, so the agents "
            f"would pull {image}, which nothing "
            "publishes: set it to this repository (its release workflow publishes "
            "ghcr.io/OWNER/NAME-agent:VERSION), or set agent.image (docs/install.md)"
        )
    else:
        return []
    return [replace(document.problem(("repository", "url"), message), severity="warning")]


def _is_url(text: str) -> bool:
    try:
        parts = urlsplit(text)
        return parts.scheme in ("https", "http", "ssh") and bool(parts.hostname)
    except ValueError:
        return False
