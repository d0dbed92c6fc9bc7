"""``dsf-compile ci``: a fleet's checks and its pull request's report, what the GitHub
Action (``action.yml``) runs (``fleet-repo.md``).

``steps.py`` runs each check as the user types it (``dsf-compile validate``, ``render
--check``, ``schemas --check``, ``diff``, ``backtest``) and reads its JSON; ``base.py``
lays out the base branch's tree beside the pull request's; ``report.py`` writes the
Markdown report and its annotations; ``run.py`` puts them in order. The pull request's
comment goes through :mod:`dsf_compile.edges.github`.
"""
