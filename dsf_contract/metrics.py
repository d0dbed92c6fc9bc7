"""The names of the agent's metrics that the compiler's rules and dashboard query.

The agent registers them (``agent/metrics.py``) and the compiler writes recording rules,
alerts and a Grafana dashboard over them (``dsf_compile/render/observability.py``). The
names are as Prometheus shows them: a counter carries ``_total`` (``prometheus_client``
adds it when the name given lacks it, and keeps it when it is there).
"""

from __future__ import annotations

#: Upstream's names: the score itself, cycles by outcome, and the time spent per stage.
SCORE = "dynamic_score"
REQUESTS = "dynamic_scoring_requests_total"
STAGE_SECONDS = {
    stage: f"dynamic_scoring_{stage}_seconds_total" for stage in ("fetch", "perform", "send")
}
#: Ours: why a scorer fails, and how its configuration loaded.
FAILURES = "dynamic_scoring_failures_total"
LAST_SUCCESS = "dynamic_scoring_last_success_timestamp_seconds"
SCORER_ENABLED = "dynamic_scoring_scorer_enabled"
SCORERS = "dynamic_scoring_scorers"
CONFIG_RELOAD_OK = "dynamic_scoring_config_last_reload_successful"
INVALID_SUMMARIES = "dynamic_scoring_config_invalid_summaries"
START_LAG = "dynamic_scoring_cycle_start_lag_seconds"
#: Labels of :data:`SCORE` (``ds_`` and the dimension) and of the per-scorer metrics.
SCORE_CLUSTER_LABEL = "ds_cluster"
SCORE_NAME_LABEL = "ds_score_name"
SCORER_LABEL = "score_name"
