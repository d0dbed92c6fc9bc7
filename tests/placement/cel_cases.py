"""CEL expressions and the cluster they run on, shared by the CEL tests.

Expected values follow the Go definitions: cel-go ``ext/strings.go`` (ext.Strings),
``k8s.io/apiserver/pkg/cel/library`` (lists.go, regex.go, quantity.go, semver.go, ip.go,
cidr.go, urls.go) and sdk-go ``pkg/cel/library`` (managedcluster.go, json.go).
"""

from __future__ import annotations

CLUSTER = {
    "metadata": {"name": "c1", "labels": {"env": "prod"}},
    "status": {
        "version": {"kubernetes": "v1.29.3"},
        "allocatable": {"cpu": "3500m", "memory": "16Gi"},
        "clusterClaims": [{"name": "platform.open-cluster-management.io", "value": "AWS"}],
    },
}


def scores(cluster: str, name: str) -> list[dict[str, object]] | None:
    return [{"name": "gpu", "value": 60}, {"name": "cpu", "value": -5}] if name == "perf" else None


TRUE_CASES = [
    # ext.Strings
    "'hello'.charAt(1) == 'e' && 'hello'.charAt(5) == ''",
    "'hello'.indexOf('l') == 2 && 'hello'.lastIndexOf('l') == 3 && 'hello'.indexOf('l', 3) == 3",
    "'MiXeD'.lowerAscii() == 'mixed' && 'MiXeD'.upperAscii() == 'MIXED'",
    "'a-b-c'.replace('-', '+') == 'a+b+c' && 'a-b-c'.replace('-', '+', 1) == 'a+b-c'",
    "'a,b,c'.split(',') == ['a', 'b', 'c'] && 'a,b,c'.split(',', 2) == ['a', 'b,c']",
    "'a,b'.split(',', 0) == []",
    "'hello'.substring(1, 3) == 'el' && '  x '.trim() == 'x'",
    "['a', 'b'].join('-') == 'a-b' && 'abc'.reverse() == 'cba'",
    # k8s Lists
    "[1, 2, 3].isSorted() && ![2, 1].isSorted() && [1, 2, 3].sum() == 6",
    "[3, 1, 2].min() == 1 && [3, 1, 2].max() == 3 && [1, 2, 1].lastIndexOf(1) == 2",
    # k8s Regex
    "'abc123def456'.find('[0-9]+') == '123'",
    "'abc123def456'.findAll('[0-9]+') == ['123', '456']",
    "'abc123def456'.findAll('[0-9]+', 1) == ['123']",
    # k8s Quantity: exact values, comparison by method
    "quantity(managedCluster.status.allocatable.memory) == quantity('16384Mi')",
    "quantity('3500m').isLessThan(quantity('4')) && quantity('4').compareTo(quantity('4000m')) == 0",
    "quantity('1.5').asApproximateFloat() == 1.5 && !quantity('1.5').isInteger()",
    "quantity('2k').asInteger() == 2000 && quantity('-1').sign() == -1",
    "quantity('1Gi').add(quantity('1Gi')) == quantity('2Gi') && quantity('5').sub(2) == quantity('3')",
    "isQuantity('2Gi') && !isQuantity('2 Gi')",
    # k8s Semver: no leading v; pre-releases rank below the release
    "semver('1.29.3').isGreaterThan(semver('1.29.0')) && semver('1.29.3').major() == 1",
    "semver('1.0.0-rc.1').isLessThan(semver('1.0.0')) && semver('1.2.3').patch() == 3",
    "!isSemver('v1.2.3') && isSemver('1.2.3-alpha+build.1')",
    # k8s IP and CIDR
    "ip('10.0.0.1').family() == 4 && ip('::1').isLoopback() && isIP('10.1.1.1')",
    "cidr('10.0.0.0/8').containsIP('10.1.2.3') && !cidr('10.0.0.0/8').containsIP(ip('11.0.0.1'))",
    "cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16') && cidr('10.1.2.3/8').masked() == cidr('10.0.0.0/8')",
    "cidr('192.168.0.0/24').prefixLength() == 24 && !isCIDR('10.0.0.1')",
    # k8s URLs
    "url('https://example.com:8443/a/b?x=1').getHost() == 'example.com:8443'",
    "url('https://example.com:8443/a').getPort() == '8443' && isURL('/relative/path')",
    # sdk-go: parseJSON (numbers are float64 in Go) and scores()
    "'{\"gpus\": 4}'.parseJSON().gpus == 4.0",
    "managedCluster.scores('perf').exists(s, s.name == 'gpu' && s.value >= 60)",
    "managedCluster.scores('perf').map(s, s.value).sum() == 55",
    # CEL's error semantics: || and && absorb an error when the other side decides
    "managedCluster.scores('missing').size() > 0 || true",
    "!(false && managedCluster.scores('missing').size() > 0)",
    "managedCluster.metadata.labels.env == 'prod'",
]


ERROR_CASES = [
    "managedCluster.scores('missing').size() > 0",  # sdk-go: "failed to get score"
    "managedCluster.metadata.labels.missing == 'x'",  # no such key
    "quantity('1') < quantity('2')",  # no '<' on quantities
    "quantity('lots').sign() == 1",
    "semver('v1.2.3').major() == 1",
    "[].min() == 0",  # "min called on empty list"
    "'abc'.charAt(4) == ''",
    "'x'.parseJSON() == 1",
]


#: What OCM's cost limit stops, whatever the cluster.
GROW = "'x'.replace('x', '" + "a" * 3000 + "')"
COSTLY = [
    # two comprehensions over a list made by replace().split('')
    f"{GROW}.split('').all(a, {GROW}.split('').all(b, a == b || a != b))",
    # a string doubled in a comprehension: memory, not only time
    f"[{GROW}].all(s, s.split('').map(x, s + s).size() > 0)",
    "[1, 2].map(a, "
    + GROW
    + ").map(s, s + s).map(s, s + s).size() == 2 && "
    + GROW
    + ".split('').exists(x, x.matches('"
    + "b" * 1500
    + "'))",
]
