"""The example fleet with every day-2 setting of ``dsf.yaml`` on, for the tests."""

from __future__ import annotations

from pathlib import Path

from tests.fleet_repo import copy_fleet

#: A self-signed test CA (certificate only; its key was thrown away).
TEST_CA = """\
-----BEGIN CERTIFICATE-----
MIIBhDCCASmgAwIBAgIUI+oiekLtkxVPzeX6i9cf67lHif0wCgYIKoZIzj0EAwIw
FjEUMBIGA1UEAwwLZHNmIHRlc3QgQ0EwIBcNMjYxMTIyMjM0MjI5WhgPMjEyNjEw
MjkyMzQyMjlaMBYxFDASBgNVBAMMC2RzZiB0ZXN0IENBMFkwEwYHKoZIzj0CAQYI
KoZIzj0DAQcDQgAECJq1mhTGAfKPKLVw9bvJHvaU8xO+EQTSlDVZ9FZFLtEEq+a4
rTrt3hcNsPmJM4MQgQ5U9z2S35p1BK19WHkDBKNTMFEwHQYDVR0OBBYEFFms8LWI
mmCP2bsnrC9rXVl857kjMB8GA1UdIwQYMBaAFFms8LWImmCP2bsnrC9rXVl857kj
MA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSQAwRgIhAJ1g4rzj3i3BiNPx
RqZaQV7Om5ElBIa27tkeXpGBRcmpAiEA+lw7VIU6/fHWuAVTBxdQmwlFP8UJoB0y
0BdqBUPpngo=
-----END CERTIFICATE-----
"""


def _indented(text: str, pad: str) -> str:
    return "".join(pad + line + "\n" for line in text.splitlines())


DAY2_SETTINGS = f"""\
agentNamespace: scoring-agent
agent:
  serviceMonitor: true
  imagePullSecrets: [dsf-pull]
  aggregate:
    sample_my_score: max
    example_powerconsumption_score: avg
  caBundle: |
{_indented(TEST_CA, "    ")}\
  overrides:
    - clusterName: edge01
      aggregate: {{sample_my_score: min}}
      caBundle: |
{_indented(TEST_CA, "        ")}\
    - clusterSelector:
        matchLabels: {{region: eu-west}}
      image: registry.eu.example/dsf/dsf-agent:0.1.0
externalSecrets:
  storeRef: {{kind: ClusterSecretStore, name: vault-backend}}
  refreshInterval: 30m
  secrets:
    api-auth-secret: {{remoteKey: "dsf/${{cluster}}/llm", property: token}}
    dsf-pull: {{remoteKey: dsf/registry-pull}}
observability:
  prometheusRule: true
  dashboard: true
  labels: {{release: kube-prometheus-stack}}
"""


def day2_fleet(target: Path, settings: str = DAY2_SETTINGS) -> Path:
    """A copy of the example fleet (no rendered/) with ``settings`` as its ``dsf.yaml``."""
    root = copy_fleet(target, with_rendered=False)
    (root / "dsf.yaml").write_text(settings, encoding="utf-8")
    return root
