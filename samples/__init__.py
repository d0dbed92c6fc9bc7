"""Reference Scoring APIs: the upstream samples, rebuilt with the standard library only.

``sample_scorer`` (time-series average), ``static_scorer`` (fixed performance and power
scores, two scorers in one service), ``prediction_scorer`` (least-squares trend) and
``fleet`` (all of them on loopback, for ``dsf-compile sync`` and the tests).
"""
