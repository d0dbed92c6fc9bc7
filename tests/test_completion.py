"""``dsf-compile completion SHELL``: each script parsed by its own shell, then loaded and asked
for completions the way a user's Tab does — commands by name, a PATH option's files, a
folder's (``--root``, ``init DIR``) folders only. zsh and fish come from Debian (``.ci/run``)."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import pytest

from dsf_compile.commands.cli import run

#: A bound on each shell, not a timed assertion: a hung shell fails instead of hanging.
SHELL_TIMEOUT = 120


def script(shell: str, folder: Path) -> Path:
    """The completion script of ``shell``, written into ``folder``."""
    out = io.StringIO()
    assert run(["completion", shell], out, io.StringIO()) == 0
    path = folder / f"dsf-compile.{shell}"
    path.write_text(out.getvalue())
    return path


def needs(shell: str) -> str:
    found = shutil.which(shell)
    if found is None:
        pytest.skip(f"{shell} is not installed (.ci/run installs it)")
    return found


@pytest.fixture
def here(tmp_path: Path) -> Path:
    """A folder holding a file and a folder whose names both start with ``s``."""
    (tmp_path / "snap.yaml").write_text("{}\n")
    (tmp_path / "sub").mkdir()
    return tmp_path


def shell_run(argv: list[str], cwd: Path, stdin: str = "") -> str:
    done = subprocess.run(
        argv, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=SHELL_TIMEOUT
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(
    ("shell", "check"),
    [("bash", ["-n"]), ("zsh", ["-n"]), ("fish", ["--no-execute"])],
)
def test_each_script_parses_in_its_shell(shell: str, check: list[str], tmp_path: Path) -> None:
    shell_run([needs(shell), *check, str(script(shell, tmp_path))], tmp_path)


_BASH = """source {script}
ask() {{ COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=()
  _shtab_dsf_compile dsf-compile "${{@: -1}}" "${{@: -2:1}}" 2>/dev/null
  echo "$(printf '%s ' "${{COMPREPLY[@]}}")|"; }}
ask dsf-compile exp
ask dsf-compile explain --scores sn
ask dsf-compile --root s
ask dsf-compile init s
"""


def test_bash_completes_commands_files_and_folders(here: Path) -> None:
    answers = shell_run([needs("bash"), "-c", _BASH.format(script=script("bash", here))], here)
    assert answers.splitlines() == ["explain |", "snap.yaml |", "sub |", "sub |"]


_FISH = """source {script}
for line in 'dsf-compile exp' 'dsf-compile explain --scores sn' 'dsf-compile --root s' \\
        'dsf-compile init s'
    echo (complete -C $line | string split -f1 \\t | string join ' ')'|'
end
"""


def test_fish_completes_commands_files_and_folders(here: Path) -> None:
    answers = shell_run([needs("fish"), "-c", _FISH.format(script=script("fish", here))], here)
    assert answers.splitlines() == ["explain|", "snap.yaml|", "sub/|", "sub/|"]


#: An interactive zsh under a pseudo-terminal: each line typed at its prompt, then Tab, the
#: line killed (^U) and a marker printed, read up to the marker and the next prompt (a
#: condition, not a wait: typed ahead of the prompt, a Tab is not a completion).
_ZSH = r"""zmodload zsh/zpty
zpty z TERM=dumb zsh -f -i
zpty -w z "PS1='READY> '; fpath=({fpath} \$fpath); autoload -Uz compinit; compinit -u -D"
zpty -r z out '*READY> *READY> '
for line in 'dsf-compile exp' 'dsf-compile explain --scores sn' 'dsf-compile --root s' \
    'dsf-compile init s'; do
  zpty -wn z "$line"$'\t\x15'"print MARK\$((40+2))"$'\n'
  zpty -r z out '*MARK42*READY> '
  print -r -- "${{out//$'\n'/ }}" | tr -d '\r\033'
done
zpty -d z
"""


def test_zsh_completes_commands_files_and_folders(here: Path) -> None:
    folder = here / "functions"
    folder.mkdir()
    script("zsh", here).rename(folder / "_dsf-compile")
    answers = shell_run([needs("zsh"), "-f", "-c", _ZSH.format(fpath=folder)], here).splitlines()
    assert len(answers) == 4, answers
    command, scores, root, init = answers
    assert "dsf-compile explain" in command
    assert "--scores snap.yaml" in scores  # a PATH option completes a file name
    # a folder's option completes folders only: "s" is sub/, not also snap.yaml
    assert "--root sub/" in root and "init sub/" in init
