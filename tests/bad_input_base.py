"""The bad-input corpus's base fleet (``tests/bad_inputs/base``) and its scorers' ``/config``
answers, as a lockfile that makes the base valid."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from dsf_compile.inputs.scorer import DynamicScorer
from dsf_compile.sync.lock import Lockfile, make_entry
from dsf_contract.scoring_api import ScorerConfig

DATA = Path(__file__).parent / "bad_inputs"
BASE = DATA / "base"
BASE_CONFIGS: dict[str, Any] = json.loads((DATA / "base-configs.json").read_text(encoding="utf-8"))


def base_lock(configs: Mapping[str, Any]) -> Lockfile:
    """A lock entry for every base scorer: Active, with ``configs[name]`` as /config when Full."""
    entries = {}
    for file in sorted((BASE / "scorers").glob("*.yaml")):
        for data in yaml.safe_load_all(file.read_text(encoding="utf-8")):
            scorer = DynamicScorer.model_validate(data)
            name = scorer.metadata.name
            full = scorer.spec.configSyncMode == "Full"
            config = ScorerConfig.model_validate(configs[name]) if full else None
            entries[name] = make_entry(scorer.spec, healthy=True, config=config)
    return Lockfile(scorers=entries)
