"""The SSRF guard (``autorag.net_guard``, through the webhooks' ``resolve_target``): the
URL's form, and every address its host resolves to (through an injected resolver, so no
DNS is needed: the system resolver is used only for address literals and ``localhost``,
which every machine resolves to loopback); push endpoints and MCP servers keep the same
rule."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

from autorag.errors import InvalidInput
from autorag.mcp_tools.guard import check_url
from autorag.push.endpoints import check_endpoint
from autorag.webhooks.guard import Resolver, display_url, refusal, resolve_target


def fixed(*addresses: str) -> Resolver:
    def resolver(host: str, port: int) -> Sequence[str]:
        return list(addresses)

    return resolver


PUBLIC = fixed("93.184.215.14")


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.8.9.10",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",  # the cloud metadata service
        "100.64.0.1",  # shared (CGNAT)
        "0.0.0.0",
        "224.0.0.1",
        "240.0.0.1",
        "255.255.255.255",
        "::1",
        "::",
        "fe80::1",
        "fc00::1",
        "ff02::1",
        "::ffff:127.0.0.1",  # IPv4 written inside IPv6
        "::ffff:10.0.0.1",
        "2002:a00:1::",  # 6to4 of 10.0.0.1
        "2001:0:4136:e378:8000:63bf:f5ff:fffe",  # Teredo, its client 10.0.0.1
        "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
        "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
        "::7f00:1",  # IPv4-compatible (deprecated) 127.0.0.1
    ],
)
def test_non_public_addresses_are_refused(address: str) -> None:
    assert refusal(address) is not None
    with pytest.raises(InvalidInput) as refused:
        resolve_target("https://hooks.example/x", allow_private=False, resolver=fixed(address))
    assert refused.value.code == "webhook_url_refused"
    assert address in refused.value.message and "allow_private" in refused.value.message


@pytest.mark.parametrize("address", ["93.184.215.14", "1.1.1.1", "2606:4700:4700::1111"])
def test_public_addresses_pass(address: str) -> None:
    assert refusal(address) is None
    target = resolve_target("https://hooks.example/in?x=1", allow_private=False,
                            resolver=fixed(address))  # fmt: skip
    assert target.address == address and target.path == "/in?x=1" and target.port == 443
    assert target.host == "hooks.example" and target.host_header == "hooks.example"


def test_one_private_address_among_public_ones_refuses_the_host() -> None:
    mixed = fixed("93.184.215.14", "10.0.0.5")
    with pytest.raises(InvalidInput, match=r"10\.0\.0\.5"):
        resolve_target("http://hooks.example/", allow_private=False, resolver=mixed)


def test_literal_addresses_and_localhost_resolve_like_any_host() -> None:
    """Through the system resolver: no DNS is needed for these."""
    for url in (
        "http://127.0.0.1:8080/hook",
        "http://[::1]/hook",
        "http://localhost:9000/",  # a hostname resolving to loopback
        "http://2130706433/",  # 127.0.0.1 written as one number
        "http://0x7f.1/",  # and in hexadecimal, shortened
        "http://[::ffff:127.0.0.1]/",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
    ):
        with pytest.raises(InvalidInput) as refused:
            resolve_target(url, allow_private=False)
        assert refused.value.code == "webhook_url_refused", url


def test_allow_private_lets_loopback_through_and_pins_the_address() -> None:
    target = resolve_target("http://localhost:9000/in", allow_private=True)
    assert target.address in ("127.0.0.1", "::1")
    assert target.pinned_url.endswith(":9000/in") and target.host_header == "localhost:9000"
    six = resolve_target("http://[::1]:81/", allow_private=True)
    assert six.pinned_url == "http://[::1]:81/" and six.host_header == "[::1]:81"


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://hooks.example/x", "https:// or http://"),
        ("file:///etc/passwd", "https:// or http://"),
        ("gopher://hooks.example/", "https:// or http://"),
        ("https://user:pass@hooks.example/", "no user name or password"),
        ("https://token@hooks.example/", "no user name or password"),
        ("https:///path-only", "names a host"),
        ("https://hooks.example/a b", "no spaces"),
        ("https://hooks.example\\@10.0.0.1/", "backslashes"),
        ("https://hooks.example:99999/", "not a valid URL"),
        ("https://hooks.example/#frag", "no #fragment"),
        ("https://hooks.example/" + "a" * 2000, "at most 2000"),
    ],
)
def test_malformed_urls_are_refused_before_any_lookup(url: str, why: str) -> None:
    def never(host: str, port: int) -> Sequence[str]:
        raise AssertionError("resolved a URL the guard should have refused")

    with pytest.raises(InvalidInput, match=re.escape(why)) as refused:
        resolve_target(url, allow_private=True, resolver=never)
    assert refused.value.code == "webhook_url_invalid"


def test_a_host_that_does_not_resolve_is_refused() -> None:
    def nowhere(host: str, port: int) -> Sequence[str]:
        raise OSError("Name or service not known")

    with pytest.raises(InvalidInput, match="cannot be resolved"):
        resolve_target("https://no-such-host.invalid/", allow_private=False, resolver=nowhere)


def test_logs_show_only_the_scheme_host_and_port() -> None:
    url = "https://hooks.slack.example:8443/services/T000/B000/SECRETTOKEN?k=v"
    assert display_url(url) == "https://hooks.slack.example:8443"


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "[::ffff:10.0.0.1]", "169.254.169.254", "[64:ff9b::a9fe:a9fe]"]
)
def test_webhooks_push_endpoints_and_mcp_servers_keep_the_one_rule(host: str) -> None:
    """Every URL this server is handed to call goes through ``autorag.net_guard``."""
    url = f"https://{host}/x"
    for check in (
        lambda: resolve_target(url, allow_private=False),
        lambda: check_endpoint(url, allow_private=False),
        lambda: check_url(url, allow_private=False),
    ):
        with pytest.raises(InvalidInput, match="allow_private"):
            check()
