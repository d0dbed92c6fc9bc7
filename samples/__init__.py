"""Reference Scoring APIs: the upstream samples, rebuilt in Python.

``sample_scorer`` (time-series average), ``static_scorer`` (fixed performance and power
scores, two scorers in one service), ``prediction_scorer`` (least-squares trend),
``llm_forecast_scorer`` (a language model's forecast through an OpenAI-compatible
completions API; the only one that needs more than the standard library: httpx and
jinja2), ``ai_workload_scorer`` (GPU power forecast and static performance; its
application file is ``ai_workload_applications``, its power model ``ai_workload_power``
over ``autoregression``; needs numpy) and ``fleet`` (all of them on loopback, for
``dsf-compile sync`` and the tests). ``service`` is the HTTP plumbing they share, ``cli``
their shared command line, ``process`` runs one as a child process.
"""
