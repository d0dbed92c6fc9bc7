"""GitHub, from inside a workflow run: the event, the step's files, and the pull request's
one comment (``fleet-repo.md``).

The comment is found again by its hidden marker among the pull request's comments (listed
page by page, a bounded number of pages), created once (``POST …/issues/N/comments``) and
edited on every later run (``PATCH …/issues/comments/ID``). Every request goes through
``$GITHUB_API_URL`` (GitHub Enterprise too) with ``GITHUB_TOKEN``, which is never printed,
by the project's HTTP client: no redirect followed, each answer read within a cap, the
whole exchange within a deadline.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dsf_compile.edges.files import read_regular_file
from dsf_contract.bounded_json import load_json
from dsf_contract.records import frozen
from dsf_transport.http import (
    BodyTooLargeError,
    UserAgent,
    describe_failure,
    new_client,
    read_capped,
)

#: The event file and an API answer are read up to this size.
MAX_ANSWER_BYTES = 16 * 1024 * 1024
#: Pages of comments looked through for the marker (100 each), at the most.
MAX_PAGES = 30
PER_PAGE = 100
#: The whole exchange with the API (listing, then one write), in seconds.
DEADLINE_SECONDS = 60.0
#: The author of comments written with a workflow's own GITHUB_TOKEN.
WORKFLOW_AUTHOR = "github-actions[bot]"


class ApiError(Exception):
    """The API refused or could not be reached; ``status`` is its HTTP status, 0 for none."""

    def __init__(self, status: int, words: str) -> None:
        super().__init__(words)
        self.status = status


@frozen
class Posted:
    """What became of the comment: ``created``/``edited``, or ``notice``/``warning`` and why."""

    outcome: str
    detail: str


def pull_request(environ: Mapping[str, str]) -> dict[str, Any] | None:
    """The event's ``pull_request`` object, on a pull request's run; None otherwise."""
    if environ.get("GITHUB_EVENT_NAME") != "pull_request":
        return None
    path = environ.get("GITHUB_EVENT_PATH", "")
    if not path:
        return None
    event = load_json(read_regular_file(path, max_bytes=MAX_ANSWER_BYTES))
    found = event.get("pull_request") if isinstance(event, dict) else None
    return found if isinstance(found, dict) else None


def append_file(variable: str, text: str, environ: Mapping[str, str]) -> None:
    """Append ``text`` to the file a workflow variable names (the summary, the outputs)."""
    path = environ.get(variable, "")
    if path:
        with Path(path).open("a", encoding="utf-8") as stream:
            stream.write(text)


def post_comment(body: str, number: int, environ: Mapping[str, str], marker: str) -> Posted:
    """Create or edit the pull request's comment; a refusal is a notice, a failure a warning."""
    api = environ.get("GITHUB_API_URL", "https://api.github.com").rstrip("/")
    repository = environ.get("GITHUB_REPOSITORY", "")
    token = environ.get("GITHUB_TOKEN", "")
    if not token or "/" not in repository:
        return Posted("notice", "no GITHUB_TOKEN or GITHUB_REPOSITORY: no comment written")
    try:
        return asyncio.run(
            asyncio.wait_for(_post(api, repository, token, number, body, marker), DEADLINE_SECONDS)
        )
    except TimeoutError:
        return Posted("warning", f"{api} did not answer within {DEADLINE_SECONDS:g} s")
    except ApiError as error:
        if error.status in (403, 404):
            return Posted("notice", f"HTTP {error.status}: {error} (a fork's read-only token?)")
        return Posted("warning", str(error))


async def _post(
    api: str, repository: str, token: str, number: int, body: str, marker: str
) -> Posted:
    import httpx

    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28",
    }
    async with new_client(
        UserAgent.CI, transport=None, timeout=httpx.Timeout(30.0), headers=headers
    ) as client:
        issue = f"{api}/repos/{repository}/issues"
        found, own = await _find(client, f"{issue}/{number}/comments", marker)
        if found is not None:
            try:
                await _call(client, "PATCH", f"{issue}/comments/{found}", {"body": body})
                return Posted("edited", f"comment {found} on pull request #{number}")
            except ApiError as error:
                # someone else's comment with the marker (copied, or planted): ours is new
                if own or error.status not in (403, 404):
                    raise
        await _call(client, "POST", f"{issue}/{number}/comments", {"body": body})
        return Posted("created", f"on pull request #{number}")


async def _find(client: Any, url: str, marker: str) -> tuple[int | None, bool]:
    """The id of the comment holding ``marker`` (the workflow's own first), or None; and
    whether it is the workflow's own."""
    others: list[int] = []
    for page in range(1, MAX_PAGES + 1):
        listed = await _call(client, "GET", f"{url}?per_page={PER_PAGE}&page={page}", None)
        if not isinstance(listed, list):
            raise ApiError(0, f"{url}: not a list of comments")
        for comment in listed:
            if not isinstance(comment, dict) or not str(comment.get("body", "")).startswith(marker):
                continue
            user = comment.get("user")
            author = user.get("login") if isinstance(user, dict) else None
            if isinstance(comment.get("id"), int):
                if author == WORKFLOW_AUTHOR:
                    return int(comment["id"]), True
                others.append(int(comment["id"]))
        if len(listed) < PER_PAGE:
            break
    return (others[0] if others else None), False


async def _call(client: Any, method: str, url: str, payload: dict[str, str] | None) -> Any:
    """One request; its JSON answer, or ApiError naming the status or the failure."""
    shown = url.split("?", 1)[0]
    try:
        async with client.stream(method, url, json=payload) as response:
            data = await read_capped(response, MAX_ANSWER_BYTES)
            status = response.status_code
    except BodyTooLargeError:
        raise ApiError(
            0, f"{method} {shown}: answer larger than {MAX_ANSWER_BYTES} bytes"
        ) from None
    except Exception as err:
        failure = describe_failure(err)
        if failure is None:
            raise
        raise ApiError(0, f"{method} {shown}: {failure.words}") from None
    if not 200 <= status < 300:
        raise ApiError(status, f"{method} {shown}: HTTP {status}")
    try:
        return load_json(data)
    except ValueError:
        raise ApiError(0, f"{method} {shown}: not JSON") from None


def run_url(environ: Mapping[str, str]) -> str:
    """This run's page, where its job summary is."""
    server = environ.get("GITHUB_SERVER_URL", "https://github.com")
    repository, run = environ.get("GITHUB_REPOSITORY", ""), environ.get("GITHUB_RUN_ID", "")
    return f"{server}/{repository}/actions/runs/{run}" if repository and run else ""


def environment() -> dict[str, str]:
    """The process's environment, as the functions here read it."""
    return dict(os.environ)
