"""The webhook CA and serving certificate: real crypto, decisions replayed at chosen times."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509

from united.runtime.certificates import (
    CA_CERT,
    TLS_KEY,
    Bundle,
    Policy,
    hosts_of,
    issue,
    newer_ca_than,
    next_check,
    renew,
    renewal_time,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
HOSTS = ["united-webhook.united-system.svc", "united-webhook.united-system.svc.cluster.local", "127.0.0.1"]
POLICY = Policy()


def chain_ok(bundle: Bundle) -> bool:
    """The serving certificate verifies against one of the trusted CAs (as the API server checks)."""
    for ca in bundle.cas:
        try:
            bundle.cert.verify_directly_issued_by(ca)
        except Exception:
            continue
        return True
    return False


def test_issue_makes_a_ca_and_a_serving_certificate_for_every_host() -> None:
    bundle = issue(HOSTS, now=T0)
    ca = bundle.cas[0]
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert bundle.cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    bundle.cert.verify_directly_issued_by(ca)
    assert hosts_of(bundle.cert) == HOSTS
    ips = bundle.cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(ip) for ip in ips.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert ca.not_valid_after_utc == T0 + timedelta(days=3650)
    assert bundle.cert.not_valid_after_utc == T0 + timedelta(days=365)
    assert bundle.cert.not_valid_before_utc == T0 - timedelta(minutes=5)


def test_serving_certificate_never_outlives_its_ca() -> None:
    bundle = issue(HOSTS, now=T0, policy=Policy(ca_validity=timedelta(days=30)))
    assert bundle.cert.not_valid_after_utc == bundle.cas[0].not_valid_after_utc


def test_secret_data_round_trips() -> None:
    bundle = issue(HOSTS, now=T0)
    again = Bundle.from_secret_data(bundle.secret_data())
    assert again.cas == bundle.cas
    assert again.cert == bundle.cert
    assert again.key_pem == bundle.key_pem
    assert base64.b64decode(bundle.secret_data()[CA_CERT]) == bundle.ca_bundle


@pytest.mark.parametrize(
    "spoil",
    [
        lambda d: d.pop(TLS_KEY),
        lambda d: d.update({CA_CERT: "not base64!"}),
        lambda d: d.update({TLS_KEY: issue(HOSTS, now=T0).secret_data()[TLS_KEY]}),
        lambda d: d.update({"ca.key": issue(HOSTS, now=T0).secret_data()["ca.key"]}),
    ],
    ids=["missing key", "not base64", "foreign serving key", "foreign CA key"],
)
def test_a_spoilt_secret_is_refused(spoil: object) -> None:
    data = issue(HOSTS, now=T0).secret_data()
    spoil(data)  # type: ignore[operator]
    with pytest.raises(ValueError, match="not a webhook certificate bundle"):
        Bundle.from_secret_data(data)


def test_nothing_to_do_until_a_third_of_the_life_remains() -> None:
    bundle = issue(HOSTS, now=T0)
    renew_at = renewal_time(bundle.cert, POLICY)
    assert renew(bundle, HOSTS, now=renew_at - timedelta(seconds=1)) is None
    renewed = renew(bundle, HOSTS, now=renew_at)
    assert renewed is not None
    assert renewed.cas == bundle.cas
    assert renewed.cert.serial_number != bundle.cert.serial_number
    assert renewed.cert.not_valid_after_utc == renew_at + timedelta(days=365)
    assert chain_ok(renewed)


def test_renewal_time_is_two_thirds_into_the_life() -> None:
    bundle = issue(HOSTS, now=T0)
    start = bundle.cert.not_valid_before_utc
    life = bundle.cert.not_valid_after_utc - start
    assert renewal_time(bundle.cert, POLICY) == start + life * 2 / 3


def test_a_missing_host_reissues_with_the_union_of_names() -> None:
    bundle = issue(HOSTS[:2], now=T0)
    renewed = renew(bundle, ["10.0.0.7"], now=T0 + timedelta(days=1))
    assert renewed is not None
    assert hosts_of(renewed.cert) == [*HOSTS[:2], "10.0.0.7"]
    assert renew(renewed, HOSTS[:2], now=T0 + timedelta(days=2)) is None


def test_ca_rollover_trusts_both_then_moves_the_certificate_after_propagation() -> None:
    policy = Policy(ca_validity=timedelta(days=90), cert_validity=timedelta(days=30), propagation=timedelta(hours=1))
    bundle = issue(HOSTS, now=T0, policy=policy)
    old_ca = bundle.cas[0]
    # Keep the serving certificate fresh so that only the CA's age decides.
    roll = renewal_time(old_ca, policy)
    fresh = renew(bundle, HOSTS, now=roll - timedelta(days=1), policy=policy)
    assert fresh is not None and fresh.cas == (old_ca,)

    rolled = renew(fresh, HOSTS, now=roll, policy=policy)
    assert rolled is not None
    assert rolled.cas[1:] == (old_ca,)
    new_ca = rolled.cas[0]
    assert new_ca != old_ca
    # The certificate the server shows is still the old CA's: trusted through both bundles.
    assert rolled.cert == fresh.cert
    assert renew(rolled, HOSTS, now=roll + timedelta(minutes=59), policy=policy) is None
    assert next_check(rolled, now=roll, policy=policy) == new_ca.not_valid_before_utc + timedelta(minutes=65)

    moved = renew(rolled, HOSTS, now=roll + timedelta(hours=1), policy=policy)
    assert moved is not None
    moved.cert.verify_directly_issued_by(new_ca)
    assert moved.cas == (new_ca, old_ca)

    # The old CA leaves the bundle once it has expired.
    after = renew(moved, HOSTS, now=old_ca.not_valid_after_utc, policy=policy)
    assert after is not None
    assert after.cas == (new_ca,)
    assert chain_ok(after)


def test_everything_expired_starts_over() -> None:
    bundle = issue(HOSTS, now=T0)
    later = T0 + timedelta(days=3650 * 2)
    renewed = renew(bundle, HOSTS, now=later)
    assert renewed is not None
    assert len(renewed.cas) == 1
    assert renewed.cas[0] != bundle.cas[0]
    renewed.cert.verify_directly_issued_by(renewed.cas[0])
    assert renewed.cert.not_valid_before_utc < later < renewed.cert.not_valid_after_utc


def test_next_check_is_the_certificate_renewal() -> None:
    bundle = issue(HOSTS, now=T0)
    assert next_check(bundle, now=T0) == renewal_time(bundle.cert, POLICY)
    late = renewal_time(bundle.cert, POLICY) + timedelta(days=1)
    assert next_check(bundle, now=late) == late


def test_a_certificate_from_an_untrusted_ca_is_replaced() -> None:
    bundle = issue(HOSTS, now=T0)
    stranger = issue(HOSTS, now=T0)
    mixed = Bundle(bundle.cas, bundle.ca_key, stranger.cert, stranger.key)
    renewed = renew(mixed, HOSTS, now=T0 + timedelta(days=1))
    assert renewed is not None
    renewed.cert.verify_directly_issued_by(bundle.cas[0])


def test_a_long_namespace_still_gets_a_certificate() -> None:
    """The common name is capped at X.509's 64 characters; the SANs keep the whole name."""
    host = f"united-webhook.{'n' * 60}.svc"
    bundle = issue([host], now=T0)
    assert host in hosts_of(bundle.cert)
    assert chain_ok(bundle)


def test_newer_ca_than_compares_by_issue_time_whatever_the_bundle_order() -> None:
    policy = Policy(ca_validity=timedelta(days=90), cert_validity=timedelta(days=30))
    old = issue(HOSTS, now=T0, policy=policy)
    rolled = renew(old, HOSTS, now=renewal_time(old.cas[0], policy), policy=policy)
    assert rolled is not None and len(rolled.cas) == 2
    assert newer_ca_than(old.cas, rolled.ca_bundle), "a stale replica would drop the new CA"
    assert not newer_ca_than(rolled.cas, old.ca_bundle)
    assert not newer_ca_than(rolled.cas, rolled.ca_bundle)
    assert not newer_ca_than(rolled.cas[::-1], rolled.ca_bundle), "the order of ours does not matter"
    later = issue(HOSTS, now=T0 + timedelta(days=1), policy=policy)
    assert newer_ca_than(old.cas, later.ca_bundle) and not newer_ca_than(later.cas, old.ca_bundle)
    assert not newer_ca_than(old.cas, b"not a certificate")
    assert not newer_ca_than(old.cas, b"")
    assert newer_ca_than((), old.ca_bundle)
